package export

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

func TestSummaryCountsAndHistogram(t *testing.T) {
	s := NewSummary(Trajectories)
	ts, _ := genRecords(5, 40)
	var calls, parseErrors, results, ok, policy int64
	for i := range ts {
		ts[i].Reward.Total = float64(i % 10) // 4 records in each of 10 bins
		s.AddTrajectory(&ts[i])
		for _, seg := range ts[i].Segments {
			if seg.Kind == traj.SegmentModel && seg.Call != nil {
				calls++
				if seg.Call.ParseError != "" {
					parseErrors++
				}
			}
			if seg.Kind == traj.SegmentTool {
				results++
				if seg.Result.OK {
					ok++
				}
			}
		}
		for _, m := range ts[i].LossMask {
			policy += int64(m)
		}
	}
	if s.Records != 40 || s.Groups() != 10 || s.Calls != calls || s.ParseErrors != parseErrors ||
		s.ToolResults != results || s.ToolOK != ok || s.PolicyTokens != policy {
		t.Errorf("summary %+v; want calls %d parse errors %d results %d ok %d policy tokens %d", s, calls, parseErrors, results, ok, policy)
	}
	hist := s.Histogram(10)
	if len(hist) != 10 || hist[0].Lo != 0 || hist[9].Hi != 9 {
		t.Fatalf("histogram %+v", hist)
	}
	for _, h := range hist {
		if h.Count != 4 {
			t.Errorf("bin [%g, %g) holds %d, want 4", h.Lo, h.Hi, h.Count)
		}
	}
	if r := s.Rewards(); r.Mean != 4.5 || r.Min != 0 || r.Max != 9 {
		t.Errorf("rewards %+v", r)
	}
	var out bytes.Buffer
	if err := s.WriteText(&out, 10, 20); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "records          40 trajectories in 10 groups") ||
		strings.Count(out.String(), strings.Repeat("#", 20)) != 10 {
		t.Errorf("text:\n%s", out.String())
	}
	one := NewSummary(Advantages)
	if h := one.Histogram(5); h != nil {
		t.Errorf("empty histogram %+v", h)
	}
}

func TestEmptyFiles(t *testing.T) {
	dir := t.TempDir()
	pq := filepath.Join(dir, "empty.parquet")
	w, err := CreateAdvantages(pq, WriterOptions{RewardParts: []string{"outcome"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenAdvantages(pq)
	if got := trajtest.ReadAll(t, r, err); len(got) != 0 {
		t.Errorf("read %d records from an empty file", len(got))
	}
	info, err := Stat(pq)
	if err != nil || info.Kind != Advantages || info.Rows != 0 {
		t.Errorf("Stat = %+v, %v", info, err)
	}
	jl := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(jl, []byte("\n\n"), 0o644)
	if _, err := DetectKind(jl); !errors.Is(err, ErrNoRecords) {
		t.Errorf("DetectKind of an empty JSONL: %v, want ErrNoRecords", err)
	}
}

func TestScanRewardParts(t *testing.T) {
	dir := t.TempDir()
	recs := allAdvantages()
	want := []string{"call-cost", "call_cost", "format", "outcome", "tool_success"}
	for _, ext := range []string{".jsonl", ".jsonl.gz", ".parquet"} {
		path := filepath.Join(dir, "a"+ext)
		w, err := CreateAdvantages(path, WriterOptions{RewardParts: testParts})
		if err != nil {
			t.Fatal(err)
		}
		writeAll(t, w, recs)
		got, err := ScanRewardParts(path)
		if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: ScanRewardParts = %v, %v; want %v", ext, got, err, want)
		}
	}
}

// TestSummaryCountsParallelCalls: on traj's parallel-calls fixture (turn 0
// of sample 0 makes two calls, answered by two tool segments; sample 1
// makes one, then two unanswered) turns are counted as turns, not model
// segments: 4 turns, 5 calls, 3 results.
func TestSummaryCountsParallelCalls(t *testing.T) {
	g := testsupport.ReadGroup(t, "../traj/testdata/parallel-calls-group.json")
	s := NewSummary(Trajectories)
	for i := range g.Trajectories {
		s.AddTrajectory(&g.Trajectories[i])
	}
	if s.ModelTurns != 4 || s.Calls != 5 || s.ToolResults != 3 || s.ToolOK != 3 || s.RecordsWithCall != 2 {
		t.Errorf("turns %d calls %d results %d ok %d records with call %d, want 4 5 3 3 2", s.ModelTurns, s.Calls, s.ToolResults, s.ToolOK, s.RecordsWithCall)
	}
}

// Injected faults (tools.yaml faults:) are counted by kind, beside the
// error classes their calls failed with, in the text and the JSON report.
func TestSummaryCountsFaults(t *testing.T) {
	g := testsupport.ReadGroup(t, "../traj/testdata/parallel-calls-group.json")
	s := NewSummary(Trajectories)
	n := 0
	for i := range g.Trajectories {
		for j := range g.Trajectories[i].Segments {
			if r := g.Trajectories[i].Segments[j].Result; r != nil {
				r.Fault = []string{"implicit", "timeout", "implicit"}[n%3]
				n++
			}
		}
		s.AddTrajectory(&g.Trajectories[i])
	}
	if s.Faults["implicit"] != 2 || s.Faults["timeout"] != 1 {
		t.Errorf("faults %v, want implicit 2, timeout 1", s.Faults)
	}
	var text strings.Builder
	if err := s.WriteText(&text, 4, 40); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "injected faults: implicit 2, timeout 1") {
		t.Errorf("text lacks the faults line:\n%s", text.String())
	}
	if rep := s.Report(4); rep.Faults["implicit"] != 2 {
		t.Errorf("report faults %v", rep.Faults)
	}
}
