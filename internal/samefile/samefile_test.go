package samefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefuseByFileNotName(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sym := filepath.Join(dir, "sym.jsonl")
	hard := filepath.Join(dir, "hard.jsonl")
	if err := os.Symlink(in, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.jsonl")
	if err := os.WriteFile(other, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, filepath.Join(dir, ".", "in.jsonl"), sym, hard} {
		err := Refuse(Path{"--out", out}, Path{"--in", in})
		if err == nil || !strings.Contains(err.Error(), out) || !strings.Contains(err.Error(), in) {
			t.Errorf("out %s: err = %v, want one naming both paths", out, err)
		}
	}
	for _, out := range []string{other, filepath.Join(dir, "new.jsonl")} {
		if err := Refuse(Path{"--out", out}, Path{"--in", in}, Path{"--x", ""}); err != nil {
			t.Errorf("out %s: %v", out, err)
		}
	}
}
