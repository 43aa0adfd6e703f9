package curves

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/trainer"
)

// twoRuns are two runs with rollout and eval figures of a high accuracy
// (90–100 %), learner updates and a mismatch spanning decades.
func twoRuns() []Run {
	var runs []Run
	for r, label := range []string{"grpo", "toolrl"} {
		run := Run{Label: label}
		for it := 1; it <= 4; it++ {
			run.Iterations = append(run.Iterations, trainer.IterationMetrics{Iteration: it,
				Rollout: trainer.RolloutStats{Trajectories: 512, Accuracy: 0.9 + 0.02*float64(it), ResponseTokens: 20, CallsPerTrajectory: 0.5},
				Learner: learner.Metrics{Steps: 1, Loss: -0.1, PGLoss: -0.1, GradNorm: 2, KL: 0.001,
					Mismatch: learner.Mismatch{MeanAbs: 1e-8 * float64(r+1), MaxAbs: 1e-5}}})
		}
		for _, it := range []int{0, 4} {
			run.Evals = append(run.Evals, trainer.EvalMetrics{Iteration: it,
				Overall: trainer.RolloutStats{Trajectories: 2048, Accuracy: 0.91 + 0.01*float64(it)}})
		}
		runs = append(runs, run)
	}
	return runs
}

func chartNamed(t *testing.T, cs []chart, file string) chart {
	t.Helper()
	for _, c := range cs {
		if c.file == file {
			return c
		}
	}
	t.Fatalf("no chart %s", file)
	return chart{}
}

// TestChartsAPersonReadsRight pins the choices of #29: the charts a
// training run is read by exist; a run's rollout and eval series differ in
// colour shade and line style but pair up by hue; runs differ in hue; eval
// shares carry a 95% band; rates are shares, never-negative figures start
// at zero, the mismatch is logarithmic.
func TestChartsAPersonReadsRight(t *testing.T) {
	cs := charts(twoRuns())
	var files []string
	for _, c := range cs {
		files = append(files, c.file)
	}
	for _, want := range []string{"loss.png", "grad_norm.png", "response_length.png", "calls_per_trajectory.png", "rollout_mismatch.png", "kl.png"} {
		if !slices.Contains(files, want) {
			t.Errorf("charts %v lack %s", files, want)
		}
	}
	acc := chartNamed(t, cs, "accuracy.png")
	if len(acc.series) != 4 {
		t.Fatalf("accuracy has %d series, want 4 (2 runs × rollout, eval)", len(acc.series))
	}
	ro, ev, ro2 := acc.series[0], acc.series[1], acc.series[2]
	if ro.color != ev.color || ro.light == ev.light || ro.kind == ev.kind {
		t.Errorf("rollout %+v and eval %+v of one run: want one hue, light vs full, different line styles", ro, ev)
	}
	if ro.color == ro2.color {
		t.Errorf("two runs share colour %d", ro.color)
	}
	if len(ev.band) != len(ev.points) || ro.band != nil {
		t.Errorf("eval band %d intervals for %d points; rollout band %v", len(ev.band), len(ev.points), ro.band)
	}
	for i, b := range ev.band {
		if y := ev.points[i].Y; !(b.lo < y && y < b.hi) {
			t.Errorf("eval point %g outside its band %v", y, b)
		}
	}
	for file, want := range map[string]axis{"accuracy.png": share, "call_rate.png": share, "clip_fraction.png": share,
		"kl.png": fromZero, "grad_norm.png": fromZero, "entropy.png": fromZero, "response_length.png": fromZero,
		"calls_per_trajectory.png": fromZero, "rollout_mismatch.png": logarithmic, "loss.png": fitted} {
		if got := chartNamed(t, cs, file).axis; got != want {
			t.Errorf("%s axis %d, want %d", file, got, want)
		}
	}
	// Loss and its policy-gradient part are two quantities: own colours.
	loss := chartNamed(t, cs, "loss.png")
	if loss.series[0].color == loss.series[1].color {
		t.Errorf("loss and pg part share colour %d", loss.series[0].color)
	}
}

func TestYRange(t *testing.T) {
	for _, tc := range []struct {
		a                axis
		lo, hi           float64
		wantMin, wantMax float64
		ok               bool
	}{
		// A share between 90 and 100 % is not squashed into a 0–100 axis
		// (the old charts), nor drawn past 100 %.
		{share, 90, 99.5, 89, 100, true},
		{share, 0, 0, 0, 1, true},
		{share, 40, 60, 38.4, 61.6, true},
		// A never-negative quantity starts at 0; all zeros still get a span.
		{fromZero, 0.5, 2, 0, 2.16, true},
		{fromZero, 0, 0, 0, 1, true},
		{fitted, -1, 1, 0, 0, false},
		{logarithmic, 1e-8, 1e-5, 0, 0, false},
		{share, math.Inf(1), math.Inf(-1), 0, 0, false},
	} {
		min, max, ok := tc.a.yRange(tc.lo, tc.hi)
		if ok != tc.ok || math.Abs(min-tc.wantMin) > 1e-9 || math.Abs(max-tc.wantMax) > 1e-9 {
			t.Errorf("axis %d over %g..%g: %g..%g (%v), want %g..%g (%v)", tc.a, tc.lo, tc.hi, min, max, ok, tc.wantMin, tc.wantMax, tc.ok)
		}
	}
}

func TestDecadeTicks(t *testing.T) {
	var labels []string
	for _, tk := range (decadeTicks{}).Ticks(2e-9, 3e-5) {
		if tk.Value < 2e-9 || tk.Value > 3e-5 {
			t.Errorf("tick %g outside the data's span", tk.Value)
		}
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"1e-08", "1e-07", "1e-06", "1e-05"}; !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
}

// TestWriteDrawsEveryChart draws the charts of two runs: every standard
// chart is written, the mismatch on its log axis included.
func TestWriteDrawsEveryChart(t *testing.T) {
	dir := t.TempDir()
	written, err := Write(dir, twoRuns(), Options{Width: 400, Height: 300})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range written {
		if c.Path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, c.Name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	if len(written) < len(quantities) {
		t.Errorf("%d charts, want at least %d", len(written), len(quantities))
	}
}

// TestBandsOverPrompts: an evaluation with counts per prompt gets its band
// over prompts, overall and in the split charts, one without falls back to
// Wilson's; the legend says which.
func TestBandsOverPrompts(t *testing.T) {
	// 16 prompts × 8 samples, each prompt all right or all wrong (3 in 4
	// right), so the band over prompts is √8 times as wide as Wilson's.
	counts := func() (trainer.RolloutStats, trainer.RolloutStats) {
		all := &trainer.PromptCounts{}
		for j := range 16 {
			right := 0
			if j%4 != 0 {
				right = 8
			}
			all.Samples = append(all.Samples, 8)
			all.Correct = append(all.Correct, right)
			all.WithCall = append(all.WithCall, 8-right)
			all.Calls = append(all.Calls, 8-right)
		}
		st := trainer.RolloutStats{Groups: 16, Trajectories: 128, Accuracy: 0.75, CallRate: 0.25, PerPrompt: all}
		return st, st
	}
	withCounts, easy := counts()
	run := Run{Label: "r", Iterations: []trainer.IterationMetrics{{Iteration: 1, Rollout: trainer.RolloutStats{Trajectories: 8, Accuracy: 0.5}}},
		Evals: []trainer.EvalMetrics{
			{Iteration: 0, Overall: trainer.RolloutStats{Groups: 16, Trajectories: 128, Accuracy: 0.75, CallRate: 0.25}}, // an old line
			{Iteration: 1, Overall: withCounts, Split: map[string]map[string]trainer.RolloutStats{"difficulty": {"easy": easy}}},
		}}
	cs := charts([]Run{run})
	ev := chartNamed(t, cs, "accuracy.png").series[1]
	if len(ev.band) != 2 || ev.band[0].method != OverSamples || ev.band[1].method != OverPrompts {
		t.Fatalf("accuracy bands %+v, want Wilson then over prompts", ev.band)
	}
	if w0, w1 := ev.band[0].hi-ev.band[0].lo, ev.band[1].hi-ev.band[1].lo; w1 < 2.5*w0 {
		t.Errorf("band over prompts %.3f wide, Wilson's %.3f: want about √8 times as wide", w1, w0)
	}
	if note := bandNote(ev.band); note != "95% band over prompts, Wilson over samples at 1 of 2 points" {
		t.Errorf("legend note %q", note)
	}
	split := chartNamed(t, cs, "eval_call_rate_by_difficulty.png").series[0]
	if len(split.band) != 1 || split.band[0].method != OverPrompts || bandNote(split.band) != "95% band over prompts" {
		t.Errorf("split band %+v (%s), want over prompts", split.band, bandNote(split.band))
	}
}
