package export

import (
	"path/filepath"
	"testing"
)

// TestConstructorsReturnNilInterfaceOnError checks that a failing
// constructor returns a nil interface, not a nil pointer wrapped in one (a
// caller's `if w != nil { w.Close() }` or deferred Close would panic on it).
func TestConstructorsReturnNilInterfaceOnError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	for _, ext := range []string{".jsonl", ".jsonl.gz", ".parquet"} {
		path := filepath.Join(missing, "x"+ext)
		t.Run(ext, func(t *testing.T) {
			if w, err := CreateTrajectories(path, WriterOptions{}); err == nil || w != nil {
				t.Errorf("CreateTrajectories(%s) = %#v, %v; want nil, an error", path, w, err)
			}
			if w, err := CreateAdvantages(path, WriterOptions{}); err == nil || w != nil {
				t.Errorf("CreateAdvantages(%s) = %#v, %v; want nil, an error", path, w, err)
			}
			if r, err := OpenTrajectories(path); err == nil || r != nil {
				t.Errorf("OpenTrajectories(%s) = %#v, %v; want nil, an error", path, r, err)
			}
			if r, err := OpenAdvantages(path); err == nil || r != nil {
				t.Errorf("OpenAdvantages(%s) = %#v, %v; want nil, an error", path, r, err)
			}
		})
	}
}
