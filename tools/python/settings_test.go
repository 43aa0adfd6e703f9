package python_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/tools/python"
)

// TestRegistryRefusesPythonZeros: a python setting whose 0 means its
// default, written as 0 or below, is refused with the file, the line and
// the key instead of becoming the default (docs/refusals.md; #30).
func TestRegistryRefusesPythonZeros(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct{ settings, want string }{
		{"memory_mb: -7", "settings.memory_mb (line 5): -7 is not a valid value, want > 0 (omit the key for the default: 512)"},
		{"memory_mb: 0", "settings.memory_mb (line 5): 0 is not a valid value"},
		{"cpu_seconds: -1", "settings.cpu_seconds (line 5): -1 is not a valid value, want > 0 (omit the key for the default: 5)"},
		{"max_output_bytes: -1", "settings.max_output_bytes (line 5): -1 is not a valid value"},
		{"file_size_mb: 0", "settings.file_size_mb (line 5): 0 is not a valid value"},
		{"open_files: 0", "settings.open_files (line 5): 0 is not a valid value"},
		{"processes: -3", "settings.processes (line 5): -3 is not a valid value"},
	} {
		path := filepath.Join(dir, "reg.yaml")
		doc := "tools:\n  - type: python\n    settings:\n      allow_network: false\n      " + c.settings + "\n"
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		reg, err := tools.LoadRegistry(context.Background(), path)
		if err == nil {
			reg.Close()
			t.Errorf("case %d %q: accepted", i, c.settings)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "tool registry "+path+": tools[0] (line 2): python: ") || !strings.Contains(msg, c.want) {
			t.Errorf("case %d %q: error %q, want the file, the entry and %q", i, c.settings, msg, c.want)
		}
	}
	// Positive values and omitted keys still load.
	reg, err := tools.ParseRegistry(context.Background(), []byte("tools:\n  - type: python\n    settings: {memory_mb: 256, cpu_seconds: 2}\n  - type: python\n    function: {name: py2}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	reg.Close()
}

// TestNewRefusesNegatives: through the Go API, where 0 means the default, a
// negative limit is refused rather than replaced.
func TestNewRefusesNegatives(t *testing.T) {
	for _, opts := range []python.Options{{MemoryMB: -7}, {CPUSeconds: -1}, {MaxOutputBytes: -1}, {Processes: -1}, {OpenFiles: -2}, {FileSizeMB: -1}} {
		if _, err := python.New(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "want > 0") {
			t.Errorf("New(%+v) = %v, want a refusal", opts, err)
		}
	}
}
