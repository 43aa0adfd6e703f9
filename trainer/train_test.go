package trainer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
)

// smallConfig is a quick loop on the default policy: 3 iterations of 8 RL
// prompts × G=4, evaluated on 16 held-out prompts.
func smallConfig(t *testing.T, out string, async bool) Config {
	t.Helper()
	root := testsupport.RepoRoot(t)
	c := Config{
		Iterations: setting.Of(3), PromptsPerIteration: setting.Of(8), Out: setting.Of(out), Async: setting.Of(async),
		Learner: learner.Spec{LR: setting.Of(1e-3)},
		Eval: EvalConfig{Prompts: setting.Of(filepath.Join(root, "data", "calc", "prompts.jsonl")), Limit: setting.Of(16), GroupSize: setting.Of(2),
			Seed: setting.Of[uint64](7), SplitBy: setting.Of([]string{"difficulty"})},
	}
	c.Rollout.ID = setting.Of("t")
	c.Rollout.Model = setting.Of(filepath.Join(root, "models", "calc"))
	c.Rollout.Prompts = setting.Of(filepath.Join(root, "data", "calc", "rl.jsonl"))
	c.Rollout.GroupSize = setting.Of(4)
	c.Rollout.Seed = setting.Of[uint64](1)
	c.Rollout.Sampling.MaxNewTokens = setting.Of(48)
	c.Rollout.Limits.MaxTokens = setting.Of(96)
	return c
}

func latestWeights(t *testing.T, out string) (int64, string) {
	t.Helper()
	s, err := policystore.OpenReadOnly(filepath.Join(out, PolicyDir))
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Latest()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range v.Manifest.Files {
		if f.Path == "model.safetensors" {
			return v.Number, f.SHA256
		}
	}
	t.Fatalf("%s: no model.safetensors", v.Dir)
	return 0, ""
}

// TestTrainThreeIterations: the embedded loop on models/calc runs 3
// iterations; each iteration's groups were sampled by the version before it
// (0, 1, 2) and carry the iteration in their ids; every iteration and
// evaluation writes its line; the run is deterministic for a seed (same
// figures, timings aside, and the same weights).
func TestTrainThreeIterations(t *testing.T) {
	testsupport.RequireORT(t)
	outA, outB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	res, err := Train(context.Background(), smallConfig(t, outA, false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstIteration != 1 || res.LastIteration != 3 || res.Version != 3 || res.Interrupted {
		t.Fatalf("result %+v", res)
	}
	versions := map[int]map[int64]int{}
	r, err := export.OpenTrajectories(filepath.Join(outA, TrajectoriesFile))
	for _, tr := range trajtest.ReadAll(t, r, err) {
		if versions[tr.Iteration] == nil {
			versions[tr.Iteration] = map[int64]int{}
		}
		versions[tr.Iteration][tr.PolicyVersion]++
		if !strings.HasSuffix(tr.GroupID, "@"+string(rune('0'+tr.Iteration))) {
			t.Errorf("trajectory %s of iteration %d: group id %s", tr.ID, tr.Iteration, tr.GroupID)
		}
	}
	for k := 1; k <= 3; k++ {
		if len(versions[k]) != 1 || versions[k][int64(k-1)] != 8*4 {
			t.Errorf("iteration %d: trajectories by policy version %v, want 32 of version %d", k, versions[k], k-1)
		}
	}
	ms := testsupport.ReadJSONLines[IterationMetrics](t, filepath.Join(outA, MetricsFile))
	evs := testsupport.ReadJSONLines[EvalMetrics](t, filepath.Join(outA, EvalFile))
	if len(ms) != 3 || len(evs) != 4 {
		t.Fatalf("%d metrics lines, %d eval lines; want 3 and 4", len(ms), len(evs))
	}
	for i, m := range ms {
		if m.Iteration != i+1 || m.RolloutVersion != int64(i) || m.PublishedVersion != int64(i+1) || m.Learner.TokensTrained == 0 {
			t.Errorf("metrics line %d: %+v", i, m)
		}
	}
	if m := ms[0].Learner; m.Mismatch.MaxAbs > 1e-4 || m.ClipFracHigh+m.ClipFracLow != 0 {
		t.Errorf("first update on on-policy data: mismatch %+v, clip %g/%g", m.Mismatch, m.ClipFracLow, m.ClipFracHigh)
	}
	if e := evs[0]; e.PolicyVersion != 0 || e.Prompts != 16 || len(e.Split["difficulty"]) != 2 || e.Overall.Trajectories != 32 {
		t.Errorf("eval of version 0: %+v", e)
	}
	for _, e := range evs {
		checkPromptCounts(t, e)
	}
	// Determinism: a second run, same seed.
	if _, err := Train(context.Background(), smallConfig(t, outB, false), Options{}); err != nil {
		t.Fatal(err)
	}
	_, wa := latestWeights(t, outA)
	_, wb := latestWeights(t, outB)
	if wa != wb {
		t.Errorf("two runs of one seed published different weights: %s vs %s", wa, wb)
	}
	msB := testsupport.ReadJSONLines[IterationMetrics](t, filepath.Join(outB, MetricsFile))
	for i := range ms {
		a, b := ms[i], msB[i]
		a.Seconds, b.Seconds = PhaseSeconds{}, PhaseSeconds{}
		a.Rollout.Seconds, b.Rollout.Seconds = 0, 0
		a.Advantage.Seconds, b.Advantage.Seconds = 0, 0
		a.Learner.Seconds, b.Learner.Seconds, a.Learner.TokensPerS, b.Learner.TokensPerS = 0, 0, 0, 0
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("iteration %d figures differ between two runs of one seed:\n%s\n%s", i+1, ja, jb)
		}
	}
}

// TestTrainInterruptAndResume: cancelling during iteration 2 finishes and
// publishes it; --resume continues at iteration 3 and ends with the weights
// an uninterrupted run publishes.
func TestTrainInterruptAndResume(t *testing.T) {
	testsupport.RequireORT(t)
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Train(ctx, smallConfig(t, out, false), Options{OnEval: func(e EvalMetrics) {
		if e.Iteration == 2 {
			cancel() // inside iteration 2, before its metrics line
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.LastIteration != 2 || res.Version != 2 {
		t.Fatalf("interrupted run: %+v", res)
	}
	if _, err := Train(context.Background(), smallConfig(t, out, false), Options{}); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("a second run into the same out without resume: %v, want an error naming --resume", err)
	}
	res, err = Train(context.Background(), smallConfig(t, out, false), Options{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstIteration != 3 || res.LastIteration != 3 || res.Version != 3 {
		t.Fatalf("resumed run: %+v", res)
	}
	ms := testsupport.ReadJSONLines[IterationMetrics](t, filepath.Join(out, MetricsFile))
	if len(ms) != 3 || ms[2].Iteration != 3 || ms[2].RolloutVersion != 2 {
		t.Fatalf("metrics after resume: %d lines, last %+v", len(ms), ms[len(ms)-1])
	}
	whole := filepath.Join(t.TempDir(), "whole")
	if _, err := Train(context.Background(), smallConfig(t, whole, false), Options{}); err != nil {
		t.Fatal(err)
	}
	_, a := latestWeights(t, out)
	_, b := latestWeights(t, whole)
	if a != b {
		t.Errorf("interrupted + resumed run published %s, an uninterrupted one %s", a, b)
	}
}

// TestTrainAsync: with async, iteration k samples with the version before
// the previous update (0, 0, 1): one version of staleness, trained on.
func TestTrainAsync(t *testing.T) {
	testsupport.RequireORT(t)
	out := filepath.Join(t.TempDir(), "async")
	cfg := smallConfig(t, out, true)
	cfg.Eval.Prompts = setting.Of("")
	if _, err := Train(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	ms := testsupport.ReadJSONLines[IterationMetrics](t, filepath.Join(out, MetricsFile))
	want := []int64{0, 0, 1}
	for i, m := range ms {
		lag := m.Learner.PolicyVersion - m.RolloutVersion
		if m.RolloutVersion != want[i] || m.Learner.Dropped != 0 || m.Learner.Staleness[string(rune('0'+lag))] != m.Learner.Records {
			t.Errorf("iteration %d: rollout version %d (want %d), learner at %d, staleness %v, dropped %d",
				m.Iteration, m.RolloutVersion, want[i], m.Learner.PolicyVersion, m.Learner.Staleness, m.Learner.Dropped)
		}
	}
}

func TestConfigRefusals(t *testing.T) {
	root := testsupport.RepoRoot(t)
	cases := map[string]func(c *Config){
		"rollout.out":           func(c *Config) { c.Rollout.Out = setting.Of("x.jsonl") },
		"iterations":            func(c *Config) { c.Iterations = setting.Of(0) },
		"prompts_per_iteration": func(c *Config) { c.PromptsPerIteration = setting.Of(0) },
		"greedy":                func(c *Config) { c.Rollout.Sampling.Greedy = setting.Of(true) },
		"loss_agg":              func(c *Config) { c.Learner.LossAgg = setting.Of("sum") },
		"max_staleness":         func(c *Config) { c.Learner.MaxStaleness = setting.Of[int64](0); c.Async = setting.Of(true) },
	}
	for name, mutate := range cases {
		c := smallConfig(t, filepath.Join(t.TempDir(), "x"), false)
		mutate(&c)
		if err := c.Normalize(); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	// The evaluation set must be held out.
	c := smallConfig(t, filepath.Join(t.TempDir(), "y"), false)
	c.Eval.Prompts = setting.Of(filepath.Join(root, "data", "calc", "rl.jsonl"))
	if _, err := Train(context.Background(), c, Options{}); err == nil || !strings.Contains(err.Error(), "held out") {
		t.Errorf("eval set = RL set: %v", err)
	}
}

func TestLoadConfigStrict(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("iterations: 2\nlearner:\n  lrr: 0.1\n"), 0o644)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "lrr") {
		t.Fatalf("unknown key: %v", err)
	}
	root := testsupport.RepoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "experiments", "*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("experiments/*.yaml: %v, %v", files, err)
	}
	for _, f := range files {
		c, err := LoadConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Normalize(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if m := c.Rollout.Model.Get(); !filepath.IsAbs(m) || filepath.Base(filepath.Dir(m)) != "models" || !strings.HasPrefix(filepath.Base(m), "calc") {
			t.Errorf("%s: rollout.model %q not resolved against the file", f, c.Rollout.Model.Get())
		}
	}
}

// TestPromptsForNeverRepeatsWithinAnIteration: at the seam of two passes
// over the prompt set an iteration still gets distinct prompts, and each
// pass covers the set.
func TestPromptsForNeverRepeatsWithinAnIteration(t *testing.T) {
	r := &run{cfg: Config{PromptsPerIteration: setting.Of(3)}}
	r.cfg.Rollout.Seed = setting.Of[uint64](5)
	for i := range 7 {
		r.prompts = append(r.prompts, prompt.Prompt{ID: string(rune('a' + i))})
	}
	seen := map[string]int{}
	for k := 1; k <= 14; k++ {
		ps := r.promptsFor(k)
		ids := map[string]bool{}
		for _, p := range ps {
			if ids[p.ID] || p.Iteration != k {
				t.Fatalf("iteration %d: %v", k, ps)
			}
			ids[p.ID] = true
			seen[p.ID]++
		}
		if len(ps) != 3 {
			t.Fatalf("iteration %d: %d prompts", k, len(ps))
		}
	}
	if len(seen) != 7 {
		t.Errorf("14 iterations of 3 saw %d of 7 prompts", len(seen))
	}
}
