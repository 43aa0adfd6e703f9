package trainer

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/setting"
)

// The summary and the progress lines say what a person needs: how the run
// ended, the last figures, where the files are; per iteration the figures
// and an ETA; per evaluation each split.
func TestReportLines(t *testing.T) {
	var b bytes.Buffer
	r := Result{FirstIteration: 1, LastIteration: 2, Version: 2, VersionDir: "o/policy/v000002", Out: "o", Interrupted: true, Elapsed: 61 * time.Second}
	r.Last.Rollout.Accuracy, r.Last.Rollout.CallRate = 0.5, 0.25
	r.LastEval = &EvalMetrics{PolicyVersion: 2, Prompts: 16}
	r.Write(&b)
	for _, want := range []string{"train: interrupted (the iteration in progress was finished and published): iterations 1-2 in 1m1s; latest policy version 2",
		"accuracy 50.0%, call rate 25.0%", "eval (v2)", "on 16 held-out prompts", "metrics         o/metrics.jsonl, o/eval.jsonl", "plots           toolrl plot o"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	p := NewProgress(&b, 4)
	m := IterationMetrics{Iteration: 1, RolloutVersion: 0, PublishedVersion: 1}
	m.Seconds.Total = 10
	p.Iteration(m)
	p.Eval(EvalMetrics{Iteration: 1, PolicyVersion: 1, Split: map[string]map[string]RolloutStats{"difficulty": {"easy": {Accuracy: 1}}}})
	p.Finish()
	for _, want := range []string{"train: iter 1 v0→v1", "(1/4)", "ETA 30s", "eval after iteration 1 (v1)", "difficulty=easy accuracy 100.0%"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, b.String())
		}
	}
}

// The start line says the shape of the run and how to start its workers.
func TestDescribe(t *testing.T) {
	c := smallConfig(t, t.TempDir(), false)
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	if got := c.Describe(""); !strings.HasPrefix(got, "3 iterations × 8 prompts × G=") || !strings.Contains(got, ", on-policy, out ") {
		t.Errorf("one process: %s", got)
	}
	got := c.Describe("redis://h:1/0")
	for _, want := range []string{"records up to max_staleness 1 versions behind", "distributed on redis://h:1/0 (job t:", "--watch redis --redis URL --job t"} {
		if !strings.Contains(got, want) {
			t.Errorf("distributed: %s lacks %q", got, want)
		}
	}
	c.Async = setting.Of(true)
	if got := c.Describe(""); !strings.Contains(got, "async (one version of staleness)") {
		t.Errorf("async: %s", got)
	}
}
