package trainer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/setting"
)

// TestLearnerKeysExplicitZeroIsASetting: the learner: keys are
// learner.Spec's; an explicit 0 is that setting (kl_beta: 0 from the file,
// seed: 0 instead of the rollout's seed), an unset key takes the declared
// or derived default, ref_model is relative to the file, and an unknown key
// is refused naming it.
func TestLearnerKeysExplicitZeroIsASetting(t *testing.T) {
	dir := t.TempDir()
	head := "iterations: 1\nprompts_per_iteration: 2\nout: o\nrollout:\n  model: m\n  prompts: p.jsonl\n  seed: 5\n"
	load := func(body string) (Config, error) { return loadConfigText(t, dir, head+body) }
	c, err := load("learner:\n  kl_beta: 0\n  seed: 0\n  ref_model: ref\n")
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Learner.KLBeta; !v.IsSet() || v.Get() != 0 || v.Source() != setting.File {
		t.Errorf("learner.kl_beta: 0: %+v, want set to 0 by the file", v)
	}
	o, err := c.LearnerOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.Seed != 0 || o.Loss.KLBeta != 0 || o.LR != 1e-4 {
		t.Errorf("options %+v: want the explicit seed 0 (not the rollout's 5), kl_beta 0, the default lr", o)
	}
	if got, want := c.Learner.RefModel.Get(), filepath.Join(dir, "ref"); got != want {
		t.Errorf("learner.ref_model %q, want %q (relative to the file)", got, want)
	}

	// train --set: a key of the same record, named by its key (no flag of
	// train's sets it).
	if err := setting.SetAll(&c, []string{"learner.kl_beta=0.5", "learner.lr=0"}, setting.Override); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LearnerOptions(); err == nil || !strings.Contains(err.Error(), "learner.lr 0: want a finite value > 0") {
		t.Errorf("--set learner.lr=0: %v", err)
	}

	if c, err = load("learner:\n  lr: 3.0e-4\n"); err != nil {
		t.Fatal(err)
	}
	if o, err = c.LearnerOptions(); err != nil {
		t.Fatal(err)
	}
	if o.Seed != 5 || o.LR != 3e-4 || o.MaxStaleness != 1 {
		t.Errorf("options %+v: want the rollout's seed 5, lr 3e-4, max_staleness 1", o)
	}

	for body, want := range map[string]string{
		"learner:\n  lrr: 0.1\n":                                                 "lrr",
		"learner:\n  lr: 0\n":                                                    "learner.lr 0: want a finite value > 0",
		"learner:\n  loss_agg: sum\n":                                            `learner.loss_agg: loss aggregation "sum"`,
		"learner:\n  max_staleness: 0\nasync: true\n":                            "learner.max_staleness: 0 with async: true",
		"learner:\n  clip_low: 1.5\n":                                            "learner.clip_low 1.5: want 0 < ε < 1",
		"learner:\n  micro_batch_tokens: 0\n":                                    "learner.micro_batch_tokens 0: want ≥ 1",
		"learner:\n  skip_non_finite: maybe\n":                                   "line 9: cannot unmarshal !!str `maybe` into bool",
		"learner:\n  loss_agg: seq-mean-token-sum-norm\n  loss_norm_length: 0\n": "learner.loss_norm_length 0: want > 0",
	} {
		c, err := load(body)
		if err == nil {
			_, err = c.LearnerOptions()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// TestAdvantageKeys: the advantage: keys are advantage.Spec's; an explicit
// 0 is that setting; the staleness keys (advantage.StalenessSpec's, which
// mean nothing in a train config) and unknown keys are refused naming the
// key, in a file and in a --set.
func TestAdvantageKeys(t *testing.T) {
	dir := t.TempDir()
	head := "iterations: 1\nprompts_per_iteration: 2\nout: o\nrollout:\n  model: m\n  prompts: p.jsonl\n"
	load := func(body string) (Config, error) { return loadConfigText(t, dir, head+body) }
	c, err := load("advantage:\n  mode: hybrid\n  process_weight: 0\n  eps: 0\n")
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.AdvantageConfig()
	if err != nil {
		t.Fatal(err)
	}
	if a.Mode != advantage.ModeHybrid || a.ProcessWeight != 0 || a.Eps != 0 || a.Gamma != 1 || a.MaxStaleness != -1 {
		t.Errorf("advantage config %+v: want hybrid, process_weight 0, eps 0 and the defaults", a)
	}
	for body, want := range map[string]string{
		"advantage:\n  bogus: 1\n":          "field bogus not found",
		"advantage:\n  max_staleness: 2\n":  "field max_staleness not found",
		"advantage:\n  flag_stale: false\n": "field flag_stale not found",
		"advantage:\n  mode: sideways\n":    `advantage.mode "sideways", want outcome, process, hybrid, stepgroup or turns`,
		"advantage:\n  kl_coef: 0.1\n":      "advantage.kl_coef 0.1 needs a KL estimator",
	} {
		c, err := load(body)
		if err == nil {
			err = c.Normalize()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	if err := setting.SetAll(&c, []string{"advantage.max_staleness=1"}, setting.Override); err == nil || !strings.Contains(err.Error(), `"advantage.max_staleness" is not a setting`) {
		t.Errorf("--set advantage.max_staleness=1: %v", err)
	}
}

// loadConfigText writes a train config with text into dir and loads it.
func loadConfigText(t *testing.T, dir, text string) (Config, error) {
	t.Helper()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadConfig(path)
}
