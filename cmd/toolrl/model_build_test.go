package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/safetensors"
)

// shardedCheckpoint writes a tiny random checkpoint as bf16 safetensors in
// at least two shards (the way save_pretrained shards a 1B model) and
// returns its folder.
func shardedCheckpoint(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "ckpt")
	if _, stderr, err := runToolrl(t, "model", "build", "--random", "--shape", "tiny", "--seed", "5",
		"--safetensors", "--dtype", "bf16", "--max-shard-size", "40KB", "--out", src); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	shards, _ := filepath.Glob(filepath.Join(src, "model-*-of-*.safetensors"))
	if len(shards) < 2 {
		t.Fatalf("want a sharded checkpoint, got shards %v", shards)
	}
	if _, err := os.Stat(filepath.Join(src, "model.safetensors")); err == nil {
		t.Fatal("a sharded checkpoint also holds model.safetensors")
	}
	return src
}

// A sharded bf16 checkpoint builds: every tensor read through the index
// reaches the output exactly (bf16 -> f32 is exact), and the summary says
// what went in and what came out.
func TestModelBuildShardedBF16(t *testing.T) {
	src := shardedCheckpoint(t)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, err := runToolrl(t, "model", "build", "--from-safetensors", src, "--safetensors", "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"BF16", "shards", "onnx          float32", "written", "peak RSS", "model.safetensors"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary does not say %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "model build: read") || !strings.Contains(stderr, "model build: write") {
		t.Errorf("no progress lines for read and write on stderr:\n%s", stderr)
	}
	cfg, err := llama.LoadConfig(src)
	if err != nil {
		t.Fatal(err)
	}
	a, err := llama.LoadSafetensors(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := llama.LoadSafetensors(out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, ta := range a {
		tb := b[name]
		for i := range ta.Data {
			if ta.Data[i] != tb.Data[i] {
				t.Fatalf("%s[%d]: %v in the sharded bf16 checkpoint, %v in the built folder", name, i, ta.Data[i], tb.Data[i])
			}
		}
	}
}

// The default policy rebuilt as float16 rolls out through the CLI, and its
// recorded logprobs are within float16 rounding of the float32 policy's
// teacher-forced ones (--ref-model), but not equal to them: the actor ran the
// float16 graph.
func TestModelBuildFloat16RollsOut(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	src := filepath.Join(root, "models", "calc")
	dir := t.TempDir()
	out := filepath.Join(dir, "calc-fp16")
	stdout, stderr, err := runToolrl(t, "model", "build", "--from-safetensors", src, "--onnx-dtype", "float16", "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "onnx          float16") || !strings.Contains(stdout, "F32, 1 file") {
		t.Errorf("summary:\n%s", stdout)
	}
	for _, name := range []string{"prompt_format.json", "tools.yaml"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("the float16 copy lacks %s: %v", name, err)
		}
	}
	roll := filepath.Join(dir, "roll.jsonl")
	if _, stderr, err := runToolrl(t, "rollout", "--model", out, "--ref-model", src,
		"--prompts", filepath.Join(root, "data", "calc", "prompts.jsonl"), "--out", roll, "--resume=false",
		"--limit", "4", "--group-size", "2", "--seed", "3"); err != nil {
		t.Fatalf("rollout with the float16 folder: %v\n%s", err, stderr)
	}
	stdout, stderr, err = runToolrl(t, "inspect", roll)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	m := regexp.MustCompile(`ref mismatch .* over (\d+) policy tokens: mean \|Δ\| (\S+), max \|Δ\| (\S+),`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no ref mismatch line:\n%s", stdout)
	}
	mean, _ := strconv.ParseFloat(strings.TrimSuffix(m[2], ","), 64)
	maxd, _ := strconv.ParseFloat(m[3], 64)
	t.Logf("float16 actor vs float32 teacher-forced logprobs over %s tokens: mean |Δ| %g, max |Δ| %g", m[1], mean, maxd)
	if !(maxd > 0) || maxd > 0.05 || mean > 5e-3 {
		t.Fatalf("float16 rollout logprobs vs float32: mean |Δ| %g, max |Δ| %g (want 0 < max <= 0.05, mean <= 5e-3)", mean, maxd)
	}
}

// retype rewrites one tensor's header entry of a safetensors file (dtype
// and shape, same byte range), as a checkpoint holding another dtype has it.
func retype(t *testing.T, path, tensor string, dtype string, shape []int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	if err := json.Unmarshal(hdr[tensor], &e); err != nil {
		t.Fatalf("%s: %v", tensor, err)
	}
	e["dtype"], e["shape"] = dtype, shape
	if hdr[tensor], err = json.Marshal(e); err != nil {
		t.Fatal(err)
	}
	nh, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(nh)))
	out = append(append(out, nh...), b[8+n:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Each bad checkpoint fails with an error that names the file and the
// tensor or key, and leaves nothing at --out (not even a staging folder).
func TestModelBuildBadCheckpoints(t *testing.T) {
	index := func(t *testing.T, dir string) (safetensors.Index, func(safetensors.Index)) {
		b, err := os.ReadFile(filepath.Join(dir, safetensors.IndexFile))
		if err != nil {
			t.Fatal(err)
		}
		var idx safetensors.Index
		if err := json.Unmarshal(b, &idx); err != nil {
			t.Fatal(err)
		}
		return idx, func(idx safetensors.Index) {
			b, _ := json.Marshal(idx)
			if err := os.WriteFile(filepath.Join(dir, safetensors.IndexFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	H := int64(cfg.HiddenSize)
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
		want  []string
	}{
		{"missing shard", func(t *testing.T, dir string) {
			idx, _ := index(t, dir)
			if err := os.Remove(filepath.Join(dir, idx.WeightMap[llama.NormName])); err != nil {
				t.Fatal(err)
			}
		}, []string{safetensors.IndexFile, "-of-", "cannot be opened"}},
		{"shard missing a tensor the index lists", func(t *testing.T, dir string) {
			idx, save := index(t, dir)
			other := idx.WeightMap[llama.EmbedName]
			if other == idx.WeightMap[llama.NormName] {
				t.Fatal("embedding and final norm in one shard")
			}
			idx.WeightMap[llama.NormName] = other
			save(idx)
		}, []string{safetensors.IndexFile, llama.NormName, "does not hold it"}},
		{"I64 weight", func(t *testing.T, dir string) {
			idx, _ := index(t, dir)
			retype(t, filepath.Join(dir, idx.WeightMap[llama.NormName]), llama.NormName, "I32", []int64{H / 2})
		}, []string{"-of-", llama.NormName, "I32", "F32, F16 and BF16"}},
		{"F8 weight", func(t *testing.T, dir string) {
			idx, _ := index(t, dir)
			retype(t, filepath.Join(dir, idx.WeightMap[llama.NormName]), llama.NormName, "F8_E4M3", []int64{2 * H})
		}, []string{"-of-", llama.NormName, "F8_E4M3", "F32, F16 and BF16"}},
		{"unsupported architecture", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "config.json")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			m["model_type"] = "gemma3"
			b, _ = json.Marshal(m)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"config.json", "model_type", "gemma3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := shardedCheckpoint(t)
			c.spoil(t, src)
			parent := t.TempDir()
			out := filepath.Join(parent, "out")
			_, _, err := runToolrl(t, "model", "build", "--from-safetensors", src, "--out", out)
			if err == nil {
				t.Fatal("built from a bad checkpoint")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("a failed build left %v in the output's folder", entries)
			}
		})
	}
}

// --out is replaced whole only when it is a model folder: a stale file of
// the old folder is gone, a failed build leaves the old folder as it was, and
// a non-empty directory without config.json is refused untouched.
func TestModelBuildReplacesOnlyModelFolders(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m")
	build := func(args ...string) error {
		_, _, err := runToolrl(t, append([]string{"model", "build", "--random", "--shape", "tiny", "--out", out}, args...)...)
		return err
	}
	if err := build("--safetensors"); err != nil {
		t.Fatal(err)
	}
	if err := build(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "model.safetensors")); err == nil {
		t.Error("the rebuilt folder keeps the old build's model.safetensors")
	}
	// A failing build (a missing shard) must not touch the folder in place.
	src := shardedCheckpoint(t)
	shards, _ := filepath.Glob(filepath.Join(src, "model-*-of-*.safetensors"))
	if err := os.Remove(shards[0]); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(out, "onnx", "model.onnx"))
	if _, _, err := runToolrl(t, "model", "build", "--from-safetensors", src, "--out", out); err == nil {
		t.Fatal("built without a shard")
	}
	after, err := os.ReadFile(filepath.Join(out, "onnx", "model.onnx"))
	if err != nil || string(after) != string(before) {
		t.Fatalf("a failed build changed the existing folder (err %v)", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("leftovers beside --out: %v", entries)
	}

	other := filepath.Join(dir, "notes")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "todo.txt"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = runToolrl(t, "model", "build", "--random", "--shape", "tiny", "--out", other)
	if err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Fatalf("building over a non-model directory: err %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(other, "todo.txt")); err != nil || string(b) != "keep me" {
		t.Fatalf("the refused directory changed: %q, %v", b, err)
	}
}

func TestModelBuildRefusesBadDTypeFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--onnx-dtype", "bfloat16"}, []string{"--onnx-dtype", "bfloat16"}},
		{[]string{"--onnx-dtype", "float16", "--quantize", "int8"}, []string{"--onnx-dtype", "--quantize"}},
		{[]string{"--max-shard-size", "1GB"}, []string{"--max-shard-size", "--safetensors"}},
		{[]string{"--safetensors", "--max-shard-size", "lots"}, []string{"--max-shard-size", "lots"}},
		{[]string{"--safetensors", "--max-shard-size", "0MB"}, []string{"--max-shard-size"}},
		{[]string{"--dtype", "bf16"}, []string{"--dtype", "--safetensors", "--onnx-dtype"}},
	} {
		args := append([]string{"model", "build", "--random", "--shape", "tiny", "--out", out}, c.args...)
		_, _, err := runToolrl(t, args...)
		wantUsageError(t, args, err, c.want...)
	}
}
