package tokenizer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// LineOptions say how ConvertLines reads and writes each line.
type LineOptions struct {
	// Name is the input's name in errors, e.g. "stdin".
	Name string
	// AddSpecial encodes with the post-processor's special tokens (e.g. a
	// leading <s>).
	AddSpecial bool
	// JSONInput reads every input line as a JSON string, so a text may
	// hold newlines.
	JSONInput bool
	// Decode reads every input line as a JSON array of ids and writes the
	// decoded text as a JSON string; SkipSpecial then leaves special tokens
	// out.
	Decode, SkipSpecial bool
	// Tokens writes token strings instead of ids.
	Tokens bool
}

// ConvertLines reads in line by line (lines up to 64 MiB) and writes to out
// one JSON value a line: the ids of each text (token strings with
// o.Tokens), or with o.Decode the text of each id array. Special tokens
// written in a text are always recognised. It stops at the first line it
// cannot read, naming it ("stdin line 3: ...").
func ConvertLines(tok Interface, in io.Reader, out io.Writer, o LineOptions) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		var result any
		if o.Decode {
			var ids []int32
			if err := json.Unmarshal([]byte(line), &ids); err != nil {
				return fmt.Errorf("%s line %d: want a JSON array of ids: %w", o.Name, n, err)
			}
			text, err := tok.Decode(ids, o.SkipSpecial)
			if err != nil {
				return fmt.Errorf("%s line %d: %w", o.Name, n, err)
			}
			result = text
		} else {
			text := line
			if o.JSONInput {
				if err := json.Unmarshal([]byte(line), &text); err != nil {
					return fmt.Errorf("%s line %d: want a JSON string: %w", o.Name, n, err)
				}
			}
			ids, err := tok.Encode(text, o.AddSpecial)
			if err != nil {
				return fmt.Errorf("%s line %d: %w", o.Name, n, err)
			}
			result = ids
			if o.Tokens {
				toks := make([]string, len(ids))
				for i, id := range ids {
					toks[i], _ = tok.IDToToken(id)
				}
				result = toks
			}
		}
		if err := enc.Encode(result); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", o.Name, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
