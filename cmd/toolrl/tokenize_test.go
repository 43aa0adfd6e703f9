package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTinyTokenizer writes a byte-level BPE tokenizer.json (256 byte tokens,
// two merges, one special token) and returns its path.
func writeTinyTokenizer(t *testing.T) string {
	t.Helper()
	vocab := map[string]int{}
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = rune(256 + n)
			n++
		}
		vocab[string(r)] = b
	}
	vocab["hi"] = 256
	vocab["Ġhi"] = 257
	doc := map[string]any{
		"added_tokens":   []any{map[string]any{"id": 258, "content": "<|end|>", "special": true}},
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false},
		"post_processor": map[string]any{"type": "TemplateProcessing", "single": []any{map[string]any{"Sequence": map[string]any{"id": "A"}}, map[string]any{"SpecialToken": map[string]any{"id": "<|end|>"}}}, "special_tokens": map[string]any{"<|end|>": map[string]any{"id": "<|end|>", "ids": []int{258}}}},
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"h i", "Ġ hi"}},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runTokenizeCmd(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newTokenizeCmd()
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage = true
	err := cmd.Execute()
	return out.String(), err
}

func TestTokenizeCmd(t *testing.T) {
	tok := writeTinyTokenizer(t)
	cases := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"lines", "hi hi\nhi<|end|>\n", nil, "[256,257]\n[256,258]\n"},
		{"add special", "hi\n", []string{"--add-special"}, "[256,258]\n"},
		{"json input keeps newlines", `"hi\nhi"` + "\n", []string{"--json"}, "[256,10,256]\n"},
		{"tokens", "hi hi\n", []string{"--tokens"}, `["hi","Ġhi"]` + "\n"},
		{"decode", "[256,257,258]\n[256,10]\n", []string{"--decode"}, `"hi hi<|end|>"` + "\n" + `"hi\n"` + "\n"},
		{"decode skip special", "[256,258]\n", []string{"--decode", "--skip-special"}, `"hi"` + "\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := runTokenizeCmd(t, c.stdin, append([]string{"--tokenizer", tok}, c.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestTokenizeCmdErrors(t *testing.T) {
	tok := writeTinyTokenizer(t)
	var ue usageError
	if _, err := runTokenizeCmd(t, "x\n"); !errors.As(err, &ue) {
		t.Fatalf("missing --tokenizer: %v, want a usage error", err)
	}
	if _, err := runTokenizeCmd(t, "x\n", "--tokenizer", tok, "--decode", "--json"); !errors.As(err, &ue) {
		t.Fatalf("--decode --json: %v, want a usage error", err)
	}
	_, err := runTokenizeCmd(t, "[1]\nnot json\n", "--tokenizer", tok, "--decode")
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad input: %v, want a runtime error naming line 2", err)
	}
	if _, err := runTokenizeCmd(t, "", "--tokenizer", filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("missing tokenizer file accepted")
	}
}
