package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadSpecs: a JSON array comes back as written, a registry file as its
// Specs; an array that does not parse is ErrSpecsNotJSON.
func TestReadSpecs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	array := filepath.Join(dir, "specs.json")
	written := `[{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}]`
	if err := os.WriteFile(array, []byte("\n  "+written+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadSpecs(ctx, array); err != nil || string(got) != written {
		t.Errorf("array: %s, %v; want it as written", got, err)
	}
	got, err := ReadSpecs(ctx, "testdata/calc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := LoadRegistry(ctx, "testdata/calc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if want, _ := json.Marshal(reg.Specs()); string(got) != string(want) {
		t.Errorf("registry: %s\nwant %s", got, want)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"type": `), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSpecs(ctx, bad); !errors.Is(err, ErrSpecsNotJSON) || err.Error() != bad+": not valid JSON" {
		t.Errorf("bad array: %v", err)
	}
	if _, err := ReadSpecs(ctx, filepath.Join(dir, "none")); err == nil || !strings.HasPrefix(err.Error(), "read tools: ") {
		t.Errorf("missing file: %v", err)
	}
}
