package orchestrator

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoadJobExplicitTemperatureZeroIsGreedy: temperature: 0 written in a job
// file means greedy, as documented; left out it means 1.
func TestLoadJobExplicitTemperatureZeroIsGreedy(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]float64{
		"sampling:\n  temperature: 0\n": 0,
		"sampling:\n  top_k: 5\n":       1,
		"":                              1,
	} {
		path := filepath.Join(dir, "job.yaml")
		if err := os.WriteFile(path, []byte("model: m\nprompts: p.jsonl\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		job, err := LoadJob(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Normalize(); err != nil {
			t.Fatal(err)
		}
		if d := job.Decoding(); d.Temperature != want || d.Greedy != (want == 0) {
			t.Errorf("%q: temperature %g greedy %v, want %g", body, d.Temperature, d.Greedy, want)
		}
	}
}
