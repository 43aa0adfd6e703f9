package calceval

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/trainer"
)

// TestWriteReport: the report is one line of what was evaluated, then
// WriteTable's table; temperature 0 is named greedy.
func TestWriteReport(t *testing.T) {
	root := testsupport.RepoRoot(t)
	model, prompts := filepath.Join(root, "models", "calc"), filepath.Join(root, "data", "calc", "prompts.jsonl")
	for _, c := range []struct {
		temperature float64
		want        string
	}{
		{0.7, "model eval: " + model + " on 4 prompts of " + prompts + ", 2 samples each, T=0.7, seed 3: 1.2 s\n"},
		{0, "model eval: " + model + " on 4 prompts of " + prompts + ", 2 samples each, greedy, seed 3: 1.2 s\n"},
	} {
		e, err := New(context.Background(), Options{Model: model, Prompts: prompts, Limit: 4, Samples: 2, Temperature: c.temperature, Seed: 3, MaxNewTokens: 8})
		if err != nil {
			t.Fatal(err)
		}
		ev := trainer.EvalMetrics{Prompts: 4, Overall: trainer.RolloutStats{Seconds: 1.23}}
		var report, table bytes.Buffer
		if err := e.WriteReport(&report, ev, nil); err != nil {
			t.Fatal(err)
		}
		if err := WriteTable(&table, &e.Job, ev, nil, e.SplitBy); err != nil {
			t.Fatal(err)
		}
		header, rest, _ := strings.Cut(report.String(), "\n")
		if header+"\n" != c.want || rest != table.String() {
			t.Errorf("report:\n%s\nwant the line %q and then\n%s", report.String(), c.want, table.String())
		}
	}
}
