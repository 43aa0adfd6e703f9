package testsupport

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/internal/ort"
)

// InCI reports whether the tests run under CI (CI=true), where a missing
// dependency is a failure instead of a skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail skips the test locally and fails it under CI.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf(format+" (CI=true: required; run `make setup`)", args...)
	}
	t.Skipf(format+" (run `make setup`)", args...)
}

// RequireORT initialises ONNX Runtime or skips/fails the test.
func RequireORT(t testing.TB) {
	t.Helper()
	if err := ort.Init(); err != nil {
		SkipOrFail(t, "onnxruntime: %v", err)
	}
}

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}
