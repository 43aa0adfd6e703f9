package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/traj"
)

// calcRecords rolls out the default policy at temperature temp through the
// CLI and computes outcome advantages, returning the records' file.
func calcRecords(t *testing.T, dir string, temp float64) string {
	t.Helper()
	root := testsupport.RepoRoot(t)
	roll, adv := filepath.Join(dir, "roll.jsonl"), filepath.Join(dir, "adv.jsonl")
	if _, stderr, err := runToolrl(t, "rollout", "--model", filepath.Join(root, "models", "calc"),
		"--prompts", filepath.Join(root, "data", "calc", "prompts.jsonl"), "--out", roll, "--resume=false",
		"--limit", "12", "--group-size", "4", "--seed", "3", "--temperature", fmt.Sprint(temp)); err != nil {
		t.Fatalf("rollout: %v\n%s", err, stderr)
	}
	if _, stderr, err := runToolrl(t, "advantage", "--in", roll, "--out", adv); err != nil {
		t.Fatalf("advantage: %v\n%s", err, stderr)
	}
	return adv
}

func readMetricsLines(t *testing.T, path string) []learner.Metrics {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []learner.Metrics
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m learner.Metrics
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("metrics line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// TestLearnOnPolicyMatchesActor: on a fresh rollout of models/calc the Go
// forward's logprobs equal ONNX Runtime's within 1e-4, so the first update's
// ratio is 1 and nothing clips, at temperature 1 and 0.7.
func TestLearnOnPolicyMatchesActor(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	for _, temp := range []float64{1, 0.7} {
		t.Run(fmt.Sprintf("T=%g", temp), func(t *testing.T) {
			dir := t.TempDir()
			adv := calcRecords(t, dir, temp)
			metrics := filepath.Join(dir, "metrics.jsonl")
			_, stderr, err := runToolrl(t, "learn", "--model", filepath.Join(root, "models", "calc"), "--in", adv,
				"--store", filepath.Join(dir, "store"), "--metrics", metrics)
			if err != nil {
				t.Fatalf("learn: %v\n%s", err, stderr)
			}
			ms := readMetricsLines(t, metrics)
			if len(ms) != 1 {
				t.Fatalf("%d metrics lines, want 1", len(ms))
			}
			m := ms[0]
			t.Logf("T=%g: %d tokens trained, rollout_mismatch max %.3g mean %.3g k3 %.3g, ratio max %.6f",
				temp, m.TokensTrained, m.Mismatch.MaxAbs, m.Mismatch.MeanAbs, m.Mismatch.K3, m.RatioMax)
			if m.TokensTrained == 0 || m.Mismatch.MaxAbs > 1e-4 || m.ClipFracHigh+m.ClipFracLow+m.DualClipFrac != 0 {
				t.Errorf("metrics %+v", m)
			}
			if !strings.Contains(stderr, "published version 1") {
				t.Errorf("stderr does not report the published version:\n%s", stderr)
			}
		})
	}
}

// TestLearnRaisesLogprobsUnderActor: one `toolrl learn` step on the
// positive-advantage records of a models/calc rollout raises the mean
// logprob of their trained tokens under the published version, as ONNX
// Runtime (the actor's scorer) computes it; the version loads in the actor
// and verifies in the store.
func TestLearnRaisesLogprobsUnderActor(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	dir := t.TempDir()
	const temp = 1.0
	adv := calcRecords(t, dir, temp)
	r, err := export.OpenAdvantages(adv)
	all := trajtest.ReadAll(t, r, err)
	var pos []traj.AdvantageRecord
	for _, rec := range all {
		for i, m := range rec.LossMask {
			if m != 0 {
				if rec.Advantages[i] > 0 {
					pos = append(pos, rec)
				}
				break
			}
		}
	}
	if len(pos) < 4 {
		t.Fatalf("only %d of %d records have a positive advantage", len(pos), len(all))
	}
	posPath := filepath.Join(dir, "positive.jsonl")
	w, err := export.CreateAdvantages(posPath, export.WriterOptions{})
	trajtest.WriteAll(t, w, err, pos...)
	storeDir := filepath.Join(dir, "store")
	if _, stderr, err := runToolrl(t, "learn", "--model", filepath.Join(root, "models", "calc"), "--in", posPath, "--store", storeDir); err != nil {
		t.Fatalf("learn: %v\n%s", err, stderr)
	}
	v := latestVersion(t, storeDir)
	if v.Number != 1 {
		t.Fatalf("latest: %+v", v)
	}
	if err := policystore.Verify(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	before := actorMeanLogprob(t, filepath.Join(root, "models", "calc"), pos, temp)
	after := actorMeanLogprob(t, v.Dir, pos, temp)
	t.Logf("mean logprob of %d positive records' trained tokens under ORT: v0 %.5f, v1 %.5f", len(pos), before, after)
	if !(after > before) {
		t.Errorf("mean logprob under the published version %.5f, before %.5f: want a rise", after, before)
	}
}

// actorMeanLogprob scores the records' trained tokens with the actor (ONNX
// Runtime) loaded from dir.
func actorMeanLogprob(t *testing.T, dir string, recs []traj.AdvantageRecord, temp float64) float64 {
	t.Helper()
	ctx := context.Background()
	p, err := actor.Load(ctx, actor.LoadOptions{Dir: dir})
	if err != nil {
		t.Fatalf("actor loads %s: %v", dir, err)
	}
	defer p.Close()
	var seqs [][]int32
	var lens []int
	for _, r := range recs {
		seqs = append(seqs, r.InputIDs)
		lens = append(lens, r.PromptLen)
	}
	lps, err := p.ScoreTemperature(ctx, seqs, lens, temp)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	var n int
	for i, r := range recs {
		for j, m := range r.LossMask {
			if m != 0 {
				sum += float64(lps[i][j])
				n++
			}
		}
	}
	return sum / float64(n)
}

func TestLearnUsageErrors(t *testing.T) {
	root := testsupport.RepoRoot(t)
	model := filepath.Join(root, "models", "calc")
	store := filepath.Join(t.TempDir(), "store")
	cases := [][]string{
		{"learn", "--in", "x.jsonl", "--store", store},
		{"learn", "--model", model, "--in", "x.jsonl"},
		{"learn", "--model", model, "--store", store},
		{"learn", "--model", model, "--in", "x.jsonl", "--redis", "redis://127.0.0.1:1", "--store", store},
		{"learn", "--model", model, "--redis", "redis://127.0.0.1:1", "--store", store},
		{"learn", "--model", model, "--in", "x.jsonl", "--store", store, "--clip-low", "1.5"},
		{"learn", "--model", model, "--in", "x.jsonl", "--store", store, "--dual-clip", "0.5"},
		{"learn", "--model", model, "--in", "x.jsonl", "--store", store, "--loss-agg", "sum"},
		{"learn", "--model", model, "--in", "x.jsonl", "--store", store, "--epochs", "0"},
		{"learn", "--model", model, "--in", "x.jsonl", "--store", store, "--lr", "0"},
		{"learn", "--model", model, "--in", "x.jsonl", "--store", store, "--rollout-quantization", "int16"},
		{"learn", "--model", model, "--in", "x.jsonl", "--store", store, "--rollout-quantization", "int8-b32-acc2"},
		{"learn", "--model", model, "--in", "x.jsonl", "--store", store, "--precision", "bf16"},
	}
	for _, args := range cases {
		_, _, err := runToolrl(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: error %v, want a usage error", args, err)
		}
	}
}

// TestLearnFlagsAreTheSpec: learn's learner flags are learner.Spec's
// (setting.Bind): an explicit --kl-beta 0 is a setting, the hidden
// --minibatch is --minibatches, and a refused value is named by its flag.
func TestLearnFlagsAreTheSpec(t *testing.T) {
	cmd := newLearnCmd()
	if err := cmd.ParseFlags([]string{"--kl-beta", "0", "--minibatch", "3"}); err != nil {
		t.Fatal(err)
	}
	fs := cmd.Flags()
	if fl := fs.Lookup("kl-beta"); !fl.Changed || fl.Value.String() != "0" {
		t.Errorf("--kl-beta 0: changed %v, value %q", fl.Changed, fl.Value)
	}
	if fl := fs.Lookup("minibatches"); fl.Value.String() != "3" || fl.DefValue != "1" {
		t.Errorf("--minibatch 3: --minibatches %q (default %q), want 3 (default 1)", fl.Value, fl.DefValue)
	}
	if fl := fs.Lookup("lr"); fl.Changed || fl.Value.String() != "0.0001" {
		t.Errorf("--lr not given: changed %v, value %q, want the default 0.0001", fl.Changed, fl.Value)
	}
	if !fs.Lookup("minibatch").Hidden {
		t.Error("--minibatch is not hidden")
	}
	model := filepath.Join(testsupport.RepoRoot(t), "models", "calc")
	store := filepath.Join(t.TempDir(), "store")
	for _, c := range []struct{ flag, value, want string }{
		{"--minibatch", "0", "learn: --minibatches 0: want ≥ 1"},
		{"--lr", "0", "learn: --lr 0: want a finite value > 0"},
		{"--kl-beta", "-1", "learn: --kl-beta -1: want ≥ 0"},
	} {
		_, _, err := runToolrl(t, "learn", "--model", model, "--in", "x.jsonl", "--store", store, c.flag, c.value)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want a usage error %q", c.flag, c.value, err, c.want)
		}
	}
}

// TestLearnPublishedLoadsInTransformersJS: a version `toolrl learn`
// published loads in @huggingface/transformers (scripts/models/interop.mjs,
// onnxruntime-node, local files only), and its greedy tokens equal the
// learner's own forward's argmax on the published weights.
func TestLearnPublishedLoadsInTransformersJS(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	script := filepath.Join(root, "scripts", "models", "interop.mjs")
	_, node := testsupport.NodePackage(t, "@huggingface/transformers")
	dir := t.TempDir()
	adv := calcRecords(t, dir, 1)
	storeDir := filepath.Join(dir, "store")
	if _, stderr, err := runToolrl(t, "learn", "--model", filepath.Join(root, "models", "calc"), "--in", adv, "--store", storeDir, "--lr", "3e-3"); err != nil {
		t.Fatalf("learn: %v\n%s", err, stderr)
	}
	v := latestVersion(t, storeDir)
	const maxNew = 12
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, v.Dir, fmt.Sprint(maxNew), "Question: 3+4\nAnswer:", "Question: 12*7\nAnswer:")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s %s: %v\n%s", script, v.Dir, err, stderr.String())
	}
	var res struct {
		Rows []struct {
			PromptIDs []int32 `json:"prompt_ids"`
			NewIDs    []int32 `json:"new_ids"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || len(res.Rows) != 2 {
		t.Fatalf("script output %q: %v", stdout.String(), err)
	}
	m, cfg, err := learner.LoadModel(v.Dir)
	if err != nil {
		t.Fatal(err)
	}
	eos := cfg.EOSTokenID.First()
	for _, row := range res.Rows {
		seq := append([]int32(nil), row.PromptIDs...)
		var want []int32
		for range maxNew {
			logits, err := m.Logits(seq)
			if err != nil {
				t.Fatal(err)
			}
			last := logits[(len(seq)-1)*cfg.VocabSize:]
			best := 0
			for j, x := range last {
				if x > last[best] {
					best = j
				}
			}
			want = append(want, int32(best))
			seq = append(seq, int32(best))
			if best == eos {
				break
			}
		}
		if fmt.Sprint(want) != fmt.Sprint(row.NewIDs) {
			t.Errorf("prompt %v: transformers.js greedy %v, learner forward %v", row.PromptIDs, row.NewIDs, want)
		}
	}
}

// buildToolrl builds the CLI once per test binary run (with the GEMM kernel
// the Makefile's build uses).
var buildToolrl = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "toolrl-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "toolrl")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOEXPERIMENT=simd")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// toolrlBinary is the CLI built once for the tests that run it as a process;
// with -short they skip, saying why (reason).
func toolrlBinary(t *testing.T, reason string) string {
	t.Helper()
	if testing.Short() {
		t.Skip(reason)
	}
	bin, err := buildToolrl()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestLearnKilledDuringPublish SIGKILLs `toolrl learn` at several moments
// while it publishes a version per 4-record batch; after every kill the
// store's latest verifies and loads in the actor, and a restarted learner
// resumes from it and publishes the next version.
func TestLearnKilledDuringPublish(t *testing.T) {
	testsupport.RequireORT(t)
	bin := toolrlBinary(t, "builds the binary")
	root := testsupport.RepoRoot(t)
	dir := t.TempDir()
	adv := calcRecords(t, dir, 1)
	storeDir := filepath.Join(dir, "store")
	var last int64
	for i, delay := range []time.Duration{0, 3 * time.Millisecond, 11 * time.Millisecond, 29 * time.Millisecond, 47 * time.Millisecond, 83 * time.Millisecond} {
		cmd := exec.Command(bin, "learn", "--model", filepath.Join(root, "models", "calc"), "--in", adv, "--store", storeDir, "--batch", "4", "--publish-every", "1", "--max-staleness", "-1")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill delay after the first "published" line of this run: the next
		// publish is then in flight or about to be.
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "published version") {
				break
			}
		}
		time.Sleep(delay)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		store, err := policystore.Open(storeDir) // the writer's open: cleans up and rolls forward
		if err != nil {
			t.Fatalf("kill %d: open store: %v", i, err)
		}
		v, err := store.Latest()
		if err != nil {
			t.Fatalf("kill %d (after %v): latest: %v", i, delay, err)
		}
		if err := policystore.Verify(context.Background(), v); err != nil {
			t.Fatalf("kill %d: latest v%d does not verify: %v", i, v.Number, err)
		}
		if v.Number <= last {
			t.Fatalf("kill %d: latest v%d, the previous run left v%d: the restarted learner published nothing", i, v.Number, last)
		}
		last = v.Number
		p, err := actor.Load(context.Background(), actor.LoadOptions{Dir: v.Dir})
		if err != nil {
			t.Fatalf("kill %d: the actor cannot load latest v%d: %v", i, v.Number, err)
		}
		p.Close()
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("kill %d after %v: latest v%d verifies and loads", i, delay, v.Number)
	}
}

// TestLearnParquetEqualsJSONL: the same records as JSONL and as Parquet
// (toolrl export) train to bit-identical weights, and a second run on the
// same input gives the same weights (determinism for a seed).
func TestLearnParquetEqualsJSONL(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	dir := t.TempDir()
	adv := calcRecords(t, dir, 1)
	pq := filepath.Join(dir, "adv.parquet")
	if _, stderr, err := runToolrl(t, "export", "--from", adv, "--to", pq); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	weights := func(in, name string) string {
		store := filepath.Join(dir, name)
		if _, stderr, err := runToolrl(t, "learn", "--model", filepath.Join(root, "models", "calc"), "--in", in, "--store", store,
			"--batch", "16", "--minibatches", "2", "--seed", "7"); err != nil {
			t.Fatalf("learn %s: %v\n%s", in, err, stderr)
		}
		v := latestVersion(t, store)
		for _, f := range v.Manifest.Files {
			if f.Path == "model.safetensors" {
				return f.SHA256
			}
		}
		t.Fatalf("%s: no model.safetensors in the manifest", v.Dir)
		return ""
	}
	a, b, c := weights(adv, "jsonl"), weights(pq, "parquet"), weights(adv, "jsonl-again")
	if a != b || a != c {
		t.Errorf("model.safetensors sha256: JSONL %s, Parquet %s, JSONL again %s", a, b, c)
	}
}

// TestLearnPrecisionFloat64: `learn --precision float64` trains the batch
// the float32 default does to float32 rounding (loss and grad_norm within
// 1e-4 relative, not equal), publishes a float32 folder whose state names
// the precision, and a float32 learner resumes from it.
func TestLearnPrecisionFloat64(t *testing.T) {
	testsupport.RequireORT(t)
	root := testsupport.RepoRoot(t)
	dir := t.TempDir()
	adv := calcRecords(t, dir, 1)
	run := func(name string, args ...string) (learner.Metrics, string) {
		store, metrics := filepath.Join(dir, name), filepath.Join(dir, name+".jsonl")
		_, stderr, err := runToolrl(t, append([]string{"learn", "--model", filepath.Join(root, "models", "calc"), "--in", adv,
			"--store", store, "--metrics", metrics, "--batch", "24"}, args...)...)
		if err != nil {
			t.Fatalf("learn %v: %v\n%s", args, err, stderr)
		}
		ms := readMetricsLines(t, metrics)
		return ms[0], stderr
	}
	m32, _ := run("f32")
	m64, _ := run("f64", "--precision", "float64")
	rel := func(a, b float64) float64 { return math.Abs(a-b) / math.Abs(b) }
	t.Logf("float32 vs float64: loss %.10g vs %.10g, grad_norm %.10g vs %.10g; %.3fs vs %.3fs for the first update",
		m32.Loss, m64.Loss, m32.GradNorm, m64.GradNorm, m32.Seconds, m64.Seconds)
	if rel(m32.Loss, m64.Loss) > 1e-4 || rel(m32.GradNorm, m64.GradNorm) > 1e-4 || m32.GradNorm == m64.GradNorm {
		t.Fatalf("float32 loss %.10g grad_norm %.10g, float64 %.10g %.10g", m32.Loss, m32.GradNorm, m64.Loss, m64.GradNorm)
	}
	v := latestVersion(t, filepath.Join(dir, "f64"))
	st, err := learner.ReadState(v)
	if err != nil || st.Precision != "float64" {
		t.Fatalf("state %+v, %v: want precision float64", st, err)
	}
	if _, stderr := run("f64", "--precision", "float32"); !strings.Contains(stderr, "resumed from") {
		t.Fatalf("a float32 learn on the float64 store did not resume:\n%s", stderr)
	}
}

// TestLearnRolloutQuantization: --rollout-quantization publishes the version
// with its quantized copy for actors (quantized/, in the manifest, whose
// config names the quantization) beside the float32 folder.
func TestLearnRolloutQuantization(t *testing.T) {
	testsupport.RequireORT(t)
	dir := t.TempDir()
	adv := calcRecords(t, dir, 1)
	store := filepath.Join(dir, "store")
	if _, stderr, err := runToolrl(t, "learn", "--model", filepath.Join(testsupport.RepoRoot(t), "models", "calc"), "--in", adv,
		"--store", store, "--rollout-quantization", "int8-b32-acc4", "--tis-cap", "2"); err != nil {
		t.Fatalf("learn: %v\n%s", err, stderr)
	}
	v := latestVersion(t, store)
	if err := policystore.Verify(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	pol, err := actor.Load(context.Background(), actor.LoadOptions{Dir: filepath.Join(v.Dir, policystore.QuantizedForm)})
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	if pol.Quantization() != "int8-b32-acc4" {
		t.Fatalf("quantized copy names quantization %q, want int8-b32-acc4", pol.Quantization())
	}
	if st, err := learner.ReadState(v); err != nil || st.RolloutQuantization != "int8-b32-acc4" {
		t.Fatalf("state %+v, %v", st, err)
	}
}
