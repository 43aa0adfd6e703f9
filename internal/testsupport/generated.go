package testsupport

import (
	"bytes"
	"os"
	"testing"
)

// CheckGenerated is the one check of a page written from code (docs/schema.md,
// docs/settings.md): with update it writes got to path first; then the file
// must hold got, else the test fails saying to run regenerate and commit.
func CheckGenerated(t testing.TB, path string, got []byte, update bool, regenerate string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run %s)", err, regenerate)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not current: run %s and commit it", path, regenerate)
	}
}
