package llama

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BuildFolder from random weights and then from the folder it wrote: the
// second build reads the checkpoint (progress: read, then write), carries
// its toolrl files over, describes the checkpoint, and reports each file's size; a
// checkpoint without tokenizer.json gets the default one, with a note.
func TestBuildFolderRandomThenFromCheckpoint(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	var notes []string
	note := func(s string) { notes = append(notes, s) }
	b, err := BuildFolder(src, BuildFolderOptions{Shape: "tiny", Seed: 4, Folder: FolderSpec{Safetensors: true}, Note: note})
	if err != nil {
		t.Fatal(err)
	}
	if b.Source != "random (shape tiny, seed 4)" || len(notes) != 0 {
		t.Errorf("source %q, notes %q", b.Source, notes)
	}
	if err := os.WriteFile(filepath.Join(src, "tools.yaml"), []byte("tools: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(src, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var steps []string
	progress := func(p Progress) {
		if len(steps) == 0 || steps[len(steps)-1] != p.Step {
			steps = append(steps, p.Step)
		}
	}
	c, err := BuildFolder(out, BuildFolderOptions{FromSafetensors: src, Folder: FolderSpec{ONNX: ONNXOptions{Progress: progress}}, Note: note})
	if err != nil {
		t.Fatal(err)
	}
	if want := src + ": F32, 1 file, "; !strings.HasPrefix(c.Source, want) {
		t.Errorf("source %q, want it to start %q", c.Source, want)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "default byte-level tokenizer") {
		t.Errorf("notes %q, want one about the default tokenizer", notes)
	}
	if strings.Join(steps, ",") != "read,write" {
		t.Errorf("progress steps %v, want read then write", steps)
	}
	if got, err := os.ReadFile(filepath.Join(out, "tools.yaml")); err != nil || string(got) != "tools: []\n" {
		t.Errorf("tools.yaml not carried over: %q, %v", got, err)
	}
	var total int64
	for i, name := range c.Files {
		st, err := os.Stat(filepath.Join(out, name))
		if err != nil || st.Size() != c.Sizes[i] {
			t.Fatalf("%s: size %d recorded, stat %v %v", name, c.Sizes[i], st, err)
		}
		total += st.Size()
	}
	if c.Bytes() != total {
		t.Errorf("Bytes %d, want %d", c.Bytes(), total)
	}
	if c.Config.HiddenSize != b.Config.HiddenSize || c.Config.NumHiddenLayers != b.Config.NumHiddenLayers {
		t.Errorf("config %+v, want the checkpoint's %+v", c.Config, b.Config)
	}
}

func TestONNXOptionsPrecision(t *testing.T) {
	for _, c := range []struct {
		o    ONNXOptions
		want string
	}{
		{ONNXOptions{}, "float32"},
		{ONNXOptions{Float16: true}, "float16 (norms, softmax, RoPE in float32; float32 logits)"},
		{ONNXOptions{Quantize: Quantization{Bits: 4, BlockSize: 64, AccuracyLevel: 4, LMHead: true}}, "int4-b64-acc4-lmhead"},
	} {
		if got := c.o.Precision(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
}
