package offline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// sameRecords reports whether got and want hold the same records, in any
// order, and the first that differs.
func sameRecords(got, want []traj.AdvantageRecord) (bool, string) {
	sorted := func(recs []traj.AdvantageRecord) []traj.AdvantageRecord {
		out := make([]traj.AdvantageRecord, len(recs))
		for i, r := range recs {
			out[i] = normRecord(r)
		}
		slices.SortFunc(out, func(a, b traj.AdvantageRecord) int { return strings.Compare(a.TrajectoryID, b.TrajectoryID) })
		return out
	}
	g, w := sorted(got), sorted(want)
	if len(g) != len(w) {
		return false, fmt.Sprintf("%d records, want %d", len(g), len(w))
	}
	for i := range g {
		if !reflect.DeepEqual(g[i], w[i]) {
			return false, fmt.Sprintf("%+v\nwant %+v", g[i], w[i])
		}
	}
	return true, ""
}

// TestRunFilesWritesWhatRunComputes: RunFiles from JSONL and from Parquet,
// to JSONL and to Parquet, writes the records Run computes over the same
// trajectories, with Run's stats and the pass's time; a --reward-parts
// part gets its Parquet column.
func TestRunFilesWritesWhatRunComputes(t *testing.T) {
	var ts []traj.Trajectory
	for i := range 6 {
		ts = append(ts, testGroup(i).Trajectories...)
	}
	jsonlIn := writeTrajectories(t, ts)
	dir := t.TempDir()
	parquetIn := filepath.Join(dir, "in.parquet")
	w, err := export.CreateTrajectories(parquetIn, export.WriterOptions{})
	trajtest.WriteAll(t, w, err, ts...)
	want, wantStats, err := offlineFile(t, jsonlIn)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{jsonlIn, parquetIn} {
		for _, name := range []string{"adv.jsonl", "adv.jsonl.gz", "adv.parquet"} {
			out := filepath.Join(dir, filepath.Base(in)+"-"+name)
			st, err := RunFiles(context.Background(), in, out, FileOptions{
				Options: Options{Config: advantage.DefaultConfig()}, RewardParts: []string{"extra"},
			})
			if err != nil {
				t.Fatalf("%s -> %s: %v", in, name, err)
			}
			if st.Stats != wantStats || st.Elapsed <= 0 {
				t.Errorf("%s -> %s: stats %+v (elapsed %v), Run gives %+v", in, name, st.Stats, st.Elapsed, wantStats)
			}
			r, err := export.OpenAdvantages(out)
			if same, diff := sameRecords(trajtest.ReadAll(t, r, err), want); !same {
				t.Errorf("%s -> %s: the file's records differ from Run's: %s", in, name, diff)
			}
			if strings.HasSuffix(name, ".parquet") {
				parts, err := export.ScanRewardParts(out)
				if err != nil || !slices.Contains(parts, "extra") {
					t.Errorf("%s -> %s: reward parts %v (%v), want extra among them", in, name, parts, err)
				}
			}
		}
	}
}

// TestRunFilesKeepsOutputOnFailure: when the pass fails (a bad input line)
// or ctx is cancelled, a file at out stays as it was; a missing input is an
// error that creates nothing.
func TestRunFilesKeepsOutputOnFailure(t *testing.T) {
	g0, g1 := testGroup(1), testGroup(2)
	g1.Trajectories[2].Reward = trajtest.BadRewards[0].Reward
	bad := writeTrajectories(t, append(g0.Trajectories, g1.Trajectories...))
	good := writeTrajectories(t, g0.Trajectories)
	out := filepath.Join(t.TempDir(), "adv.jsonl")
	if err := os.WriteFile(out, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := FileOptions{Options: Options{Config: advantage.DefaultConfig()}}
	if _, err := RunFiles(context.Background(), bad, out, opts); err == nil || !strings.Contains(err.Error(), "group "+g1.GroupID) {
		t.Errorf("bad input: %v, want an error naming group %s", err, g1.GroupID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunFiles(ctx, good, out, opts); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	if data, err := os.ReadFile(out); err != nil || string(data) != "before\n" {
		t.Errorf("out after failures: %q (%v), want it unchanged", data, err)
	}
	missingOut := filepath.Join(t.TempDir(), "adv.jsonl")
	if _, err := RunFiles(context.Background(), filepath.Join(t.TempDir(), "none.jsonl"), missingOut, opts); err == nil {
		t.Error("missing input: no error")
	}
	if _, err := os.Stat(missingOut); !os.IsNotExist(err) {
		t.Errorf("missing input created %s (%v)", missingOut, err)
	}
}

// The summary toolrl advantage prints.
func TestFileStatsWrite(t *testing.T) {
	st := FileStats{Elapsed: 2 * time.Second}
	st.Trajectories, st.Groups, st.Records, st.Tokens, st.Spilled = 8, 2, 8, 100, 1
	var b strings.Builder
	st.Write(&b)
	want := "advantages: 8 trajectories in 2 groups -> 8 records (100 tokens) in 2.00s, 50 tokens/s\n" +
		"  zero-variance 0 (dropped 0), stale 0 (dropped 0), incomplete 0, spilled 1, ref-scored 0\n"
	if b.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", b.String(), want)
	}
}
