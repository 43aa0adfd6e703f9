package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A written 0 or a negative number for a registry key or a tool setting
// whose 0 means "the default" is refused with the file, the line and the key,
// not replaced by the default (docs/refusals.md; #30).
func TestRegistryRefusesZerosAndNegatives(t *testing.T) {
	dir := t.TempDir()
	corpus, err := filepath.Abs("testdata/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, yaml string
		want       []string // parts of the error, in order
	}{
		{"max_output 0", "tools:\n  - type: calculator\n    max_output: 0\n", []string{"tools[0] (line 2)", "max_output (line 3): 0 is not a valid value"}},
		{"concurrency 0", "tools:\n  - type: calculator\n    concurrency: 0\n", []string{"tools[0] (line 2)", "concurrency (line 3): 0 is not a valid value"}},
		{"concurrency -2", "tools:\n  - type: calculator\n\n    concurrency: -2\n", []string{"tools[0] (line 2)", "concurrency (line 4): -2 is not a valid value"}},
		{"defaults max_output 0", "defaults:\n  max_output: 0\ntools:\n  - type: calculator\n", []string{"defaults", "max_output (line 2): 0 is not a valid value"}},
		{"defaults concurrency -1", "defaults:\n  concurrency: -1\ntools:\n  - type: calculator\n", []string{"defaults", "concurrency (line 2): -1 is not a valid value"}},
		{"calculator max_length -1", "tools:\n  - type: calculator\n    settings:\n      max_length: -1\n", []string{"tools[0] (line 2)", "settings.max_length (line 4): -1 is not a valid value"}},
		{"calculator decimals 0", "tools:\n  - type: calculator\n    settings: {decimals: 0}\n", []string{"tools[0] (line 2)", "settings.decimals (line 3): 0 is not a valid value"}},
		{"http max_response_bytes -5", "tools:\n  - type: http\n    settings:\n      url: http://127.0.0.1:1/x\n      max_response_bytes: -5\n", []string{"tools[0] (line 2)", "settings.max_response_bytes (line 5): -5 is not a valid value"}},
		{"search k 0", "tools:\n  - type: search\n    settings:\n      corpus: " + corpus + "\n      k: 0\n", []string{"tools[0] (line 2)", "settings.k (line 5): 0 is not a valid value"}},
		{"search b 0", "tools:\n  - type: search\n    settings:\n      corpus: " + corpus + "\n      b: 0\n", []string{"settings.b (line 5): 0 is not a valid value"}},
	}
	for i, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
		if err := os.WriteFile(path, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		reg, err := LoadRegistry(context.Background(), path)
		if err == nil {
			reg.Close()
			t.Errorf("case %d %s: accepted", i, c.name)
			continue
		}
		msg := err.Error()
		rest := msg
		for _, w := range append([]string{"tool registry " + path}, c.want...) {
			j := strings.Index(rest, w)
			if j < 0 {
				t.Errorf("case %d %s: error %q lacks %q (in order)", i, c.name, msg, w)
				break
			}
			rest = rest[j+len(w):]
		}
	}
	// Positive values, and the keys omitted, still load.
	reg, err := ParseRegistry(context.Background(), []byte("defaults: {concurrency: 4, max_output: 64}\ntools:\n  - type: calculator\n    concurrency: 1\n    max_output: 8\n    settings: {max_length: 10, decimals: 3}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	reg.Close()
}
