package export

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
)

// A JSONL file's report shows the columns it would have as Parquet, with
// the reward parts its records have; a Parquet file's, its own.
func TestFileReportColumns(t *testing.T) {
	dir := t.TempDir()
	jsonl, pq := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "a.parquet")
	ts := partsGroups(2)
	for _, path := range []string{jsonl, pq} {
		w, err := CreateTrajectories(path, WriterOptions{})
		trajtest.WriteAll(t, w, err, ts...)
	}
	for _, path := range []string{jsonl, pq} {
		info, err := Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		summary := NewSummary(info.Kind)
		for i := range ts {
			summary.AddTrajectory(&ts[i])
		}
		var text strings.Builder
		if err := info.WriteText(&text, summary.RewardParts()); err != nil {
			t.Fatal(err)
		}
		header := "columns\n"
		if info.Format != Parquet {
			header = "columns          (as Parquet)\n"
		}
		if s := text.String(); !strings.HasPrefix(s, "file             "+path) || !strings.Contains(s, header) || !strings.Contains(s, "  reward_late_part") {
			t.Errorf("%s: text\n%s", path, s)
		}
		report, err := NewFileReport(info, summary, 3)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := json.Marshal(report)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), `{"name":"reward_late_part","type":"float64?"}`) || len(report.Summary.Histogram) != 3 {
			t.Errorf("%s: report %s", path, doc)
		}
	}
}
