package curves

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/trainer"
)

func TestReadRunKeepsLastLineOfAnIteration(t *testing.T) {
	dir := t.TempDir()
	var b []byte
	// A resumed run redid iteration 2; lines are out of order and blank
	// lines are skipped.
	for _, m := range []trainer.IterationMetrics{
		{Iteration: 1, Rollout: trainer.RolloutStats{Accuracy: 0.1}},
		{Iteration: 3, Rollout: trainer.RolloutStats{Accuracy: 0.3}},
		{Iteration: 2, Rollout: trainer.RolloutStats{Accuracy: 0.2}},
		{Iteration: 2, Rollout: trainer.RolloutStats{Accuracy: 0.25}},
	} {
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), '\n', '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, trainer.MetricsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, m := range run.Iterations {
		got = append(got, m.Rollout.Accuracy)
	}
	if want := []float64{0.1, 0.25, 0.3}; !slices.Equal(got, want) {
		t.Errorf("accuracies %v, want %v", got, want)
	}
	if run.Evals != nil || run.Label != filepath.Base(dir) {
		t.Errorf("evals %v label %q", run.Evals, run.Label)
	}
}

func TestIterationTicks(t *testing.T) {
	for _, tc := range []struct {
		min, max float64
		labels   []string
		ticks    int
	}{
		{0, 3, []string{"0", "1", "2", "3"}, 4},
		{-1, 1, []string{"-1", "0", "1"}, 3},
		{1, 12, []string{"2", "4", "6", "8", "10", "12"}, 12},
		{1, 30, []string{"5", "10", "15", "20", "25", "30"}, 30},
		{0, 500, []string{"0", "100", "200", "300", "400", "500"}, 26},
		{0.5, 0.7, nil, 0},
	} {
		var labels []string
		ticks := iterationTicks{}.Ticks(tc.min, tc.max)
		for _, tk := range ticks {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, tc.labels) || len(ticks) != tc.ticks {
			t.Errorf("%g..%g: labels %v (%d ticks), want %v (%d)", tc.min, tc.max, labels, len(ticks), tc.labels, tc.ticks)
		}
	}
}
