package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
)

// model build --quantize writes a folder whose config records the
// quantization the flags asked for, and says so on stdout.
func TestModelBuildQuantize(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tiny-int4")
	stdout, _, err := runToolrl(t, "model", "build", "--random", "--shape", "tiny", "--quantize", "int4",
		"--block-size", "64", "--accuracy-level", "4", "--quantize-lm-head", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "int4-b64-acc4-lmhead") {
		t.Errorf("stdout does not name the quantization:\n%s", stdout)
	}
	mf, err := llama.OpenFolder(out)
	if err != nil {
		t.Fatal(err)
	}
	want := llama.Quantization{Bits: 4, BlockSize: 64, AccuracyLevel: 4, LMHead: true}
	if mf.Quantization != want {
		t.Fatalf("folder quantization %+v, want %+v", mf.Quantization, want)
	}
}

func TestModelBuildRefusesBadQuantizeFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--quantize", "int3"}, []string{"--quantize", "int3"}},
		{[]string{"--quantize", "int8", "--block-size", "48"}, []string{"--block-size", "48"}},
		{[]string{"--quantize", "int8", "--accuracy-level", "2"}, []string{"--accuracy-level", "2"}},
		{[]string{"--block-size", "64"}, []string{"--block-size", "--quantize"}},
		{[]string{"--accuracy-level", "4"}, []string{"--accuracy-level", "--quantize"}},
		{[]string{"--quantize-lm-head"}, []string{"--quantize-lm-head", "--quantize"}},
	} {
		args := append([]string{"model", "build", "--random", "--shape", "tiny", "--out", out}, c.args...)
		_, _, err := runToolrl(t, args...)
		wantUsageError(t, args, err, c.want...)
	}
}

// A quantized copy of a toolrl policy folder keeps its prompt format and
// tools, so that an actor can roll out with it as with the original.
func TestModelBuildQuantizedCopyOfPolicyFolder(t *testing.T) {
	src := filepath.Join(testsupport.RepoRoot(t), "models", "calc")
	out := filepath.Join(t.TempDir(), "calc-int8")
	if _, stderr, err := runToolrl(t, "model", "build", "--from-safetensors", src, "--quantize", "int8", "--out", out); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, name := range []string{"prompt_format.json", "tools.yaml"} {
		want, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(got) != string(want) {
			t.Errorf("%s not copied from %s (err %v)", name, src, err)
		}
	}
}
