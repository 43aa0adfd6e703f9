package export

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
)

// A writer that creates (not appends to) a file writes a temporary file
// beside it and renames it into place on Close: until then, and for good
// after Abort, an existing file at the path is as it was (#30). Before, a
// JSONL writer truncated the file when it was created.
func TestCreateReplacesOnlyOnClose(t *testing.T) {
	for _, name := range []string{"out.jsonl", "out.jsonl.gz", "out.parquet"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		const old = "old content\n"
		g := trajtest.Group(trajtest.Options{Job: "j", Prompt: "p", Size: 2})
		for _, abort := range []bool{true, false} {
			if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := CreateTrajectories(path, WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(g.Trajectories...); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); string(got) != old {
				t.Errorf("%s: before Close the file is %d bytes, want the old content", name, len(got))
			}
			if abort {
				if err := Abort(w); err != nil {
					t.Errorf("%s: Abort: %v", name, err)
				}
				if got, _ := os.ReadFile(path); string(got) != old {
					t.Errorf("%s: after Abort the file is %d bytes, want the old content", name, len(got))
				}
			} else {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				r, err := OpenTrajectories(path)
				if got := trajtest.ReadAll(t, r, err); len(got) != 2 {
					t.Errorf("%s: after Close %d trajectories, want 2", name, len(got))
				}
				if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
					t.Errorf("%s: mode %v, %v; want 0644", name, st.Mode(), err)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(left) > 0 {
				t.Errorf("%s (abort %v): temporary files left: %v", name, abort, left)
			}
		}
	}
}
