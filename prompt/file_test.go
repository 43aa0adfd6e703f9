package prompt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadPromptsRefusesSlashInID: a '/' in a prompt id would make
// trajectory ids ambiguous (prompt "a/1" sample 0 and prompt "a" sample 1 are
// both job/a/1/...), so ReadFile refuses it naming the file and line.
func TestReadPromptsRefusesSlashInID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.jsonl")
	input := `{"id":"a","prompt":"x"}` + "\n" + `{"id":"a/1","prompt":"y"}` + "\n"
	if err := os.WriteFile(path, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path, 0, false)
	var perr *LineError
	if !errors.As(err, &perr) || perr.File != path || perr.Line != 2 || !strings.Contains(err.Error(), "'/'") {
		t.Fatalf("err = %v, want a LineError for %s line 2 about '/'", err, path)
	}
}

// TestReadPromptsNoPrompts: a file that yields no prompt (empty, blank, or
// every line malformed and skipped) is an error naming the file.
func TestReadPromptsNoPrompts(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		content string
		skip    bool
	}{
		"empty.jsonl":   {"", false},
		"blank.jsonl":   {"\n \n", false},
		"skipped.jsonl": {"{bad\n", true},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(path, 0, c.skip); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want one naming the file", name, err)
		}
	}
}
