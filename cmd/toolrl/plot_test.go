package main

import (
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/curves"
	"github.com/toolrl/toolrl/learner"
	"github.com/toolrl/toolrl/trainer"
)

// writePlotRun writes a run's metrics.jsonl (iterations 1..n) and
// eval.jsonl (iterations 0, 2, 4, ... split by difficulty) into dir; shift
// makes runs differ.
func writePlotRun(t *testing.T, dir string, n int, shift float64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stats := func(k int, acc float64) trainer.RolloutStats {
		return trainer.RolloutStats{Groups: 4, Trajectories: 32, RewardMean: 2*acc - 0.5, Accuracy: acc,
			CallRate: 0.5 + 0.04*float64(k), CallsPerTrajectory: 0.6 + 0.05*float64(k), ResponseTokens: 20}
	}
	var metrics, evals []any
	for k := 1; k <= n; k++ {
		acc := min(1, 0.3+shift+0.07*float64(k))
		metrics = append(metrics, trainer.IterationMetrics{Iteration: k, RolloutVersion: int64(k - 1), PublishedVersion: int64(k),
			Rollout: stats(k, acc),
			Learner: learner.Metrics{Update: int64(k), Steps: 2, Epochs: 1, Records: 32, Loss: 0.1, KL: 0.001 * float64(k),
				ClipFracHigh: 0.02 + shift/10, ClipFracLow: 0.01, DualClipFrac: 0.002 * float64(k%3), Entropy: 1.5 - 0.1*float64(k)}})
	}
	for k := 0; k <= n; k += 2 {
		acc := min(1, 0.25+shift+0.06*float64(k))
		evals = append(evals, trainer.EvalMetrics{Iteration: k, PolicyVersion: int64(k), Prompts: 16, Overall: stats(k, acc),
			Split: map[string]map[string]trainer.RolloutStats{"difficulty": {"easy": stats(k, min(1, acc+0.2)), "hard": stats(k, acc/2)}}})
	}
	writePlotJSONL(t, filepath.Join(dir, trainer.MetricsFile), metrics)
	writePlotJSONL(t, filepath.Join(dir, trainer.EvalFile), evals)
}

func writePlotJSONL(t *testing.T, path string, values []any) {
	t.Helper()
	var b []byte
	for _, v := range values {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

var plotFiles = []string{"reward.png", "accuracy.png", "call_rate.png", "calls_per_trajectory.png", "response_length.png",
	"loss.png", "grad_norm.png", "kl.png", "rollout_mismatch.png", "clip_fraction.png", "entropy.png",
	"eval_accuracy_by_difficulty.png", "eval_call_rate_by_difficulty.png"}

// checkPNG decodes path and checks its size and that it is not blank.
func checkPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got := img.Bounds().Size(); got != (image.Point{X: w, Y: h}) {
		t.Errorf("%s: %v pixels, want %dx%d", path, got, w, h)
	}
	colors := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			colors[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}] = true
		}
	}
	// Axes and text are black on white; the runs' lines add their colors.
	if len(colors) < 4 {
		t.Errorf("%s: %d distinct colors, want a drawn chart", path, len(colors))
	}
}

func TestPlotOneRunWritesEveryChart(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "calc-smoke")
	writePlotRun(t, run, 6, 0)
	stdout, _, err := runToolrl(t, "plot", run)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "calc-smoke (6 iterations, 4 evals)") {
		t.Errorf("summary:\n%s", stdout)
	}
	for _, name := range plotFiles {
		path := filepath.Join(run, "plots", name)
		if !strings.Contains(stdout, path) {
			t.Errorf("%s not listed in:\n%s", path, stdout)
		}
		checkPNG(t, path, 1000, 600)
	}
}

func TestPlotOverlaysRuns(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writePlotRun(t, a, 5, 0)
	writePlotRun(t, b, 8, 0.1)
	to := filepath.Join(dir, "compare")
	stdout, _, err := runToolrl(t, "plot", a, b, "--label", "sync,async", "--to", to, "--width", "640", "--height", "400")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "sync (5 iterations, 3 evals), async (8 iterations, 5 evals)") {
		t.Errorf("summary:\n%s", stdout)
	}
	entries, err := os.ReadDir(to)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := slices.Sorted(slices.Values(plotFiles)); !slices.Equal(names, want) {
		t.Errorf("files %v, want %v (no temporary files left)", names, want)
	}
	for _, name := range plotFiles {
		checkPNG(t, filepath.Join(to, name), 640, 400)
	}

	// Without --to the overlay goes under the first run's plots/.
	if _, _, err := runToolrl(t, "plot", a, b); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, filepath.Join(a, "plots", "overlay", "accuracy.png"), 1000, 600)
}

func TestPlotSkipsChartsWithoutPoints(t *testing.T) {
	run := filepath.Join(t.TempDir(), "stale")
	// One iteration whose learner took no step (an all-stale batch), no eval.
	writePlotJSONL(t, filepath.Join(mkPlotDir(t, run), trainer.MetricsFile), []any{trainer.IterationMetrics{Iteration: 1,
		Rollout: trainer.RolloutStats{Trajectories: 8, RewardMean: 1, Accuracy: 0.5}}})
	stdout, _, err := runToolrl(t, "plot", run)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"loss.png", "grad_norm.png", "kl.png", "rollout_mismatch.png", "clip_fraction.png", "entropy.png"} {
		if !strings.Contains(stdout, name) || !strings.Contains(stdout, "skipped: no points") {
			t.Errorf("%s not reported skipped:\n%s", name, stdout)
		}
		if _, err := os.Stat(filepath.Join(run, "plots", name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s written: %v", name, err)
		}
	}
	// A lone point still draws (a marker).
	checkPNG(t, filepath.Join(run, "plots", "reward.png"), 1000, 600)
}

func TestPlotErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	writePlotRun(t, good, 3, 0)
	empty := mkPlotDir(t, filepath.Join(dir, "empty"))
	noIter := mkPlotDir(t, filepath.Join(dir, "noiter"))
	if err := os.WriteFile(filepath.Join(noIter, trainer.MetricsFile), []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	writePlotRun(t, bad, 3, 0)
	f, err := os.OpenFile(filepath.Join(bad, trainer.MetricsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"iteration\": 4, \"rollout\": \n")
	f.Close()
	badEval := filepath.Join(dir, "badeval")
	writePlotRun(t, badEval, 3, 0)
	if err := os.WriteFile(filepath.Join(badEval, trainer.EvalFile), []byte("{\"iteration\":0}\n[1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
		want  []string
		is    error
	}{
		{"no metrics", []string{good, empty}, true, []string{empty, "no metrics.jsonl"}, curves.ErrNoMetrics},
		{"not a folder", []string{filepath.Join(good, "metrics.jsonl")}, true, []string{"not a folder"}, curves.ErrNoMetrics},
		{"missing folder", []string{filepath.Join(dir, "nope")}, true, []string{"nope"}, nil},
		{"no iterations", []string{noIter}, false, []string{filepath.Join(noIter, "metrics.jsonl"), "no iterations"}, curves.ErrNoIterations},
		{"malformed line", []string{bad}, false, []string{filepath.Join(bad, "metrics.jsonl") + " line 4"}, nil},
		{"malformed eval line", []string{badEval}, false, []string{filepath.Join(badEval, "eval.jsonl") + " line 2"}, nil},
		{"labels", []string{good, "--label", "a,b"}, true, []string{"--label names 2 runs", "(1)"}, nil},
		{"size", []string{good, "--width", "10"}, true, []string{"200–8000"}, nil},
		{"no args", nil, true, []string{"at least one OUT"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runToolrl(t, append([]string{"plot"}, tc.args...)...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
			var ue usageError
			if tc.usage != errors.As(err, &ue) {
				t.Errorf("error %q: usage error %v, want %v", err, !tc.usage, tc.usage)
			}
		})
	}
}

func mkPlotDir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
