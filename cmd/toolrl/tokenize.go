package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/tokenizer"
)

func newTokenizeCmd() *cobra.Command {
	var path string
	f := tokenizer.LineOptions{Name: "stdin"}
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
			if path == "" {
				return usageErrorf("tokenize: --tokenizer FILE is required")
			}
			if f.Decode && (f.JSONInput || f.AddSpecial || f.Tokens) {
				return usageErrorf("tokenize: --decode reads id arrays; it does not combine with --json, --add-special or --tokens")
			}
			if f.SkipSpecial && !f.Decode {
				return usageErrorf("tokenize: --skip-special applies to --decode only")
			}
			tok, err := tokenizer.Load(path)
			if err != nil {
				return err
			}
			if err := tokenizer.ConvertLines(tok, cmd.InOrStdin(), cmd.OutOrStdout(), f); err != nil {
				return fmt.Errorf("tokenize: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json (or .json.gz) to use")
	cmd.Flags().BoolVar(&f.AddSpecial, "add-special", false, "add the post-processor's special tokens (e.g. a leading <s>)")
	cmd.Flags().BoolVar(&f.JSONInput, "json", false, "each input line is a JSON string")
	cmd.Flags().BoolVar(&f.Decode, "decode", false, "each input line is a JSON array of ids; print the decoded text as a JSON string")
	cmd.Flags().BoolVar(&f.SkipSpecial, "skip-special", false, "with --decode, leave special tokens out")
	cmd.Flags().BoolVar(&f.Tokens, "tokens", false, "print token strings instead of ids")
	return cmd
}
