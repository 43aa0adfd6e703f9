package llama

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/model/safetensors"
)

// defaultBuildFlags are toolrl model build's flag defaults.
func defaultBuildFlags() BuildFlags {
	return BuildFlags{Seed: 1, External: "auto", DType: "f32", ONNXDType: "float32", BlockSize: DefaultBlockSize}
}

func TestBuildFlagsOptions(t *testing.T) {
	none := func(string) bool { return false }
	f := defaultBuildFlags()
	f.Random, f.Shape, f.Out, f.Safetensors, f.DType, f.MaxShardSize = true, "tiny", "/tmp/x", true, "bf16", "1MB"
	f.Quantize, f.BlockSize, f.AccuracyLevel, f.QuantizeLMHead = "int4", 64, 4, true
	o, err := f.Options(func(name string) bool { return name == "dtype" })
	if err != nil {
		t.Fatal(err)
	}
	want := Quantization{Bits: 4, BlockSize: 64, AccuracyLevel: 4, LMHead: true}
	if o.Shape != "tiny" || o.Seed != 1 || o.Folder.ONNX.Quantize != want || o.Folder.SafetensorsDType != safetensors.BF16 ||
		o.Folder.SafetensorsShardBytes != 1000*1000 || !o.Folder.Safetensors || o.Folder.ONNX.Float16 {
		t.Errorf("options %+v", o)
	}
	fused := defaultBuildFlags()
	fused.Random, fused.Shape, fused.Out, fused.Fused, fused.Quantize = true, "tiny", "/tmp/x", true, "int4"
	if o, err := fused.Options(none); err != nil || !o.Folder.ONNX.Fused || o.Folder.ONNX.Quantize.Bits != 4 {
		t.Errorf("--fused --quantize int4: %+v, %v", o, err)
	}
	half := defaultBuildFlags()
	half.FromSafetensors, half.Out, half.ONNXDType, half.External = "/ckpt", "/out", "fp16", "always"
	if o, err := half.Options(none); err != nil || !o.Folder.ONNX.Float16 || o.Folder.ONNX.External != ExternalAlways || o.FromSafetensors != "/ckpt" {
		t.Errorf("float16 from a checkpoint: %+v, %v", o, err)
	}

	dir := t.TempDir()
	for _, c := range []struct {
		edit    func(*BuildFlags)
		changed string
		want    string
	}{
		{func(f *BuildFlags) { f.Out = "" }, "", "--out is required"},
		{func(f *BuildFlags) { f.Random = false }, "", "give exactly one of --from-safetensors DIR and --random"},
		{func(f *BuildFlags) { f.FromSafetensors = dir }, "", "give exactly one of --from-safetensors DIR and --random"},
		{func(f *BuildFlags) { f.Shape = "" }, "", "--random needs --shape ("},
		{func(f *BuildFlags) { f.Random, f.FromSafetensors = false, dir }, "", "--shape applies to --random only"},
		{func(f *BuildFlags) { f.Random, f.Shape, f.FromSafetensors, f.Out = false, "", dir, dir }, "", "--out"},
		{func(f *BuildFlags) { f.External = "sometimes" }, "", `--external-data "sometimes": want auto, always or never`},
		{func(f *BuildFlags) { f.DType = "f8" }, "", `--dtype "f8": want f32, f16 or bf16`},
		{func(f *BuildFlags) {}, "block-size", "--block-size applies to --quantize only"},
		{func(f *BuildFlags) {}, "quantize-lm-head", "--quantize-lm-head applies to --quantize only"},
		{func(f *BuildFlags) { f.Quantize = "int2" }, "", `--quantize "int2": want int8 or int4`},
		{func(f *BuildFlags) { f.Quantize, f.BlockSize = "int8", 48 }, "", "--block-size 48: want 16, 32, 64, 128 or 256"},
		{func(f *BuildFlags) { f.Quantize, f.AccuracyLevel = "int8", 2 }, "", "--accuracy-level 2: want 0 or 4"},
		{func(f *BuildFlags) { f.Quantize, f.ONNXDType = "int8", "float16" }, "", "--onnx-dtype float16 with --quantize int8 is not supported"},
		{func(f *BuildFlags) { f.ONNXDType = "bf16" }, "", `--onnx-dtype "bf16": want float32 or float16`},
		{func(f *BuildFlags) { f.Fused, f.ONNXDType = true, "float16" }, "", "--fused with --onnx-dtype float16 is not supported"},
		{func(f *BuildFlags) { f.MaxShardSize = "1MB" }, "", "--max-shard-size applies to --safetensors only"},
		{func(f *BuildFlags) { f.MaxShardSize, f.Safetensors = "lots", true }, "", `--max-shard-size "lots": `},
		{func(f *BuildFlags) {}, "dtype", "--dtype is the dtype of model.safetensors and applies to --safetensors only"},
		{func(f *BuildFlags) { f.Shape = "enormous" }, "", "enormous"},
	} {
		f := defaultBuildFlags()
		f.Random, f.Shape, f.Out = true, "tiny", filepath.Join(dir, "out")
		c.edit(&f)
		_, err := f.Options(func(name string) bool { return name == c.changed })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v (changed %q): error %v, want one containing %q", f, c.changed, err, c.want)
		}
	}
}

// TestProgressDisplayLines: off a terminal, a step is reported at each
// tenth of its bytes reached and once at its last tensor.
func TestProgressDisplayLines(t *testing.T) {
	var b bytes.Buffer
	p := NewProgressDisplay(&b, "model build")
	for i := 1; i <= 4; i++ {
		p.Update(Progress{Step: "write", Tensors: i, TotalTensors: 4, Bytes: int64(i) * 25, TotalBytes: 100})
	}
	p.Update(Progress{Step: "read", Tensors: 1, TotalTensors: 100, Bytes: 1, TotalBytes: 100})
	p.Finish()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("lines:\n%s", b.String())
	}
	for i, want := range []string{"model build: write 1/4 tensors, 25 B of 100 B (", "model build: write 2/4 tensors, 50 B of 100 B (",
		"model build: write 3/4 tensors, 75 B of 100 B (", "model build: write 4/4 tensors, 100 B of 100 B ("} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d %q, want it to start %q", i, lines[i], want)
		}
	}
}

// TestBuiltFolderWriteSummary: the summary names the folder, the shape, the
// source and every file with its size; the peak RSS line only when known.
func TestBuiltFolderWriteSummary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	b, err := BuildFolder(dir, BuildFolderOptions{Shape: "tiny", Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	b.WriteSummary(&out, 1500*time.Millisecond, "float32", 0)
	s := out.String()
	for _, want := range []string{"wrote " + dir + " in 1.5s: llama, ", "M parameters, float32\n", "  architecture  2 layers, ",
		"  weights in    random (shape tiny, seed 4)\n", "  onnx          float32\n", "  written       "} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "peak RSS") {
		t.Errorf("peak RSS 0 shown:\n%s", s)
	}
	if got, want := strings.Count(s, "\n"), 5+len(b.Files); got != want {
		t.Errorf("%d lines, want %d:\n%s", got, want, s)
	}
	out.Reset()
	b.WriteSummary(&out, time.Second, "float32", 3<<20)
	if !strings.Contains(out.String(), "  peak RSS      3.0 MiB\n") {
		t.Errorf("no peak RSS line:\n%s", out.String())
	}
}
