package calceval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewRefusesOutputOverInput: a SamplesOut (--samples-out) that is the prompts
// file or a file of the model folder (here through a symlink with a .jsonl
// name) is refused before anything is sampled or written, naming both flags.
func TestNewRefusesOutputOverInput(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	if err := os.MkdirAll(filepath.Join(model, "onnx"), 0o755); err != nil {
		t.Fatal(err)
	}
	weights := filepath.Join(model, "onnx", "model.onnx")
	prompts := filepath.Join(dir, "prompts.jsonl")
	for path, data := range map[string]string{weights: "not a model", prompts: `{"id":"p1","prompt":"1+1?","answer":"2"}` + "\n"} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "samples.jsonl")
	if err := os.Symlink(weights, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{prompts, "--samples-out " + prompts + " is the same file as --prompts"},
		{link, "--samples-out " + link + " is the same file as --model " + weights},
	} {
		o := Options{Model: model, Prompts: prompts, Samples: 8, Temperature: 1, MaxNewTokens: 64, SamplesOut: c.out}
		_, err := New(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--samples-out %s: err = %v, want %q", c.out, err, c.want)
		}
	}
	if b, _ := os.ReadFile(weights); string(b) != "not a model" {
		t.Errorf("the model file was overwritten: %q", b)
	}
}
