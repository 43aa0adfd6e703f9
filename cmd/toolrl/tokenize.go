package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/tokenizer"
)

type tokenizeFlags struct {
	path        string
	addSpecial  bool
	jsonInput   bool
	decode      bool
	skipSpecial bool
	tokens      bool
}

func newTokenizeCmd() *cobra.Command {
	var f tokenizeFlags
	cmd := &cobra.Command{
		Use:   "tokenize --tokenizer FILE",
		Short: "Tokenize or decode text with a tokenizer.json",
		Long: `tokenize reads stdin line by line and prints one JSON array of token ids per
line. No special tokens are added unless --add-special; special tokens written
in the text (such as <|im_start|>) are always recognised. With --json every
input line is a JSON string, so a text may hold newlines. With --decode every
input line is a JSON array of ids and the output is one JSON string per line.
The tokenizer is pure Go and gives the same ids as Hugging Face tokenizers.`,
		Example: `  echo 'Hello world' | toolrl tokenize --tokenizer models/calc/tokenizer.json
  printf '%s\n' '"<|im_start|>user\nhi<|im_end|>\n"' | toolrl tokenize --tokenizer tok.json --json --tokens
  echo '[9707, 1879]' | toolrl tokenize --tokenizer tok.json --decode`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.path == "" {
				return usageErrorf("tokenize: --tokenizer FILE is required")
			}
			if f.decode && (f.jsonInput || f.addSpecial || f.tokens) {
				return usageErrorf("tokenize: --decode reads id arrays; it does not combine with --json, --add-special or --tokens")
			}
			if f.skipSpecial && !f.decode {
				return usageErrorf("tokenize: --skip-special applies to --decode only")
			}
			tok, err := tokenizer.Load(f.path)
			if err != nil {
				return err
			}
			return runTokenize(tok, f, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&f.path, "tokenizer", "", "tokenizer.json (or .json.gz) to use")
	cmd.Flags().BoolVar(&f.addSpecial, "add-special", false, "add the post-processor's special tokens (e.g. a leading <s>)")
	cmd.Flags().BoolVar(&f.jsonInput, "json", false, "each input line is a JSON string")
	cmd.Flags().BoolVar(&f.decode, "decode", false, "each input line is a JSON array of ids; print the decoded text as a JSON string")
	cmd.Flags().BoolVar(&f.skipSpecial, "skip-special", false, "with --decode, leave special tokens out")
	cmd.Flags().BoolVar(&f.tokens, "tokens", false, "print token strings instead of ids")
	return cmd
}

func runTokenize(tok tokenizer.Interface, f tokenizeFlags, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		var result any
		if f.decode {
			var ids []int32
			if err := json.Unmarshal([]byte(line), &ids); err != nil {
				return fmt.Errorf("tokenize: stdin line %d: want a JSON array of ids: %w", n, err)
			}
			text, err := tok.Decode(ids, f.skipSpecial)
			if err != nil {
				return fmt.Errorf("tokenize: stdin line %d: %w", n, err)
			}
			result = text
		} else {
			text := line
			if f.jsonInput {
				if err := json.Unmarshal([]byte(line), &text); err != nil {
					return fmt.Errorf("tokenize: stdin line %d: want a JSON string: %w", n, err)
				}
			}
			ids, err := tok.Encode(text, f.addSpecial)
			if err != nil {
				return fmt.Errorf("tokenize: stdin line %d: %w", n, err)
			}
			result = ids
			if f.tokens {
				toks := make([]string, len(ids))
				for i, id := range ids {
					toks[i], _ = tok.IDToToken(id)
				}
				result = toks
			}
		}
		if err := enc.Encode(result); err != nil {
			return fmt.Errorf("tokenize: write: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("tokenize: read stdin: %w", err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("tokenize: write: %w", err)
	}
	return nil
}
