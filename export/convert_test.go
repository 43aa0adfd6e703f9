package export

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// Convert gives Parquet output a column for every reward part, also one
// that only late records have, whether it finds them in a file (its
// columns or a light scan) or with a first pass over another input; extra
// parts from the options are kept.
func TestConvertFindsEveryRewardPart(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.jsonl")
	want := partsGroups(3)
	w, err := CreateTrajectories(src, WriterOptions{})
	trajtest.WriteAll(t, w, err, want...)
	file, err := FileInput(src)
	if err != nil {
		t.Fatal(err)
	}
	if file.Name != src || file.Kind != Trajectories || file.Path != src {
		t.Fatalf("FileInput: %+v", file)
	}
	stream := Input{Name: "a stream", Kind: Trajectories,
		Trajectories: func(context.Context) (Reader[traj.Trajectory], error) { return OpenTrajectories(src) }}
	for name, in := range map[string]Input{"file": file, "not a file": stream} {
		to := filepath.Join(dir, name+".parquet")
		// One row per row group: the late part is not in the first.
		n, err := Convert(context.Background(), in, to, WriterOptions{RowsPerGroup: 1, RewardParts: []string{"extra"}})
		if err != nil || n != int64(len(want)) {
			t.Fatalf("%s: Convert: %d, %v", name, n, err)
		}
		info, err := Stat(to)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Metadata[MetaRewardParts]; got != "extra,late_part,outcome" {
			t.Errorf("%s: reward parts %q", name, got)
		}
		r, err := OpenTrajectories(to)
		if got := trajtest.ReadAll(t, r, err); len(got) != len(want) {
			t.Errorf("%s: %d trajectories back, want %d", name, len(got), len(want))
		}
	}

	// Advantage records, to JSONL.
	advSrc := filepath.Join(dir, "adv.jsonl")
	var recs []traj.AdvantageRecord
	for _, tr := range want {
		recs = append(recs, trajtest.Record(tr, 1))
	}
	aw, err := CreateAdvantages(advSrc, WriterOptions{})
	trajtest.WriteAll(t, aw, err, recs...)
	adv, err := FileInput(advSrc)
	if err != nil || adv.Kind != Advantages {
		t.Fatalf("FileInput of advantages: %v, %v", adv.Kind, err)
	}
	advTo := filepath.Join(dir, "adv.jsonl.gz")
	if n, err := Convert(context.Background(), adv, advTo, WriterOptions{}); err != nil || n != int64(len(recs)) {
		t.Fatalf("Convert advantages: %d, %v", n, err)
	}
	r, err := OpenAdvantages(advTo)
	if got := trajtest.ReadAll(t, r, err); !reflect.DeepEqual(got, recs) {
		t.Error("advantage records differ after Convert")
	}
}

// Once its context is done, Convert stops with the context's error and a
// file at to stays as it was.
func TestConvertStopsWhenDone(t *testing.T) {
	dir := t.TempDir()
	src, to := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	w, err := CreateTrajectories(src, WriterOptions{})
	trajtest.WriteAll(t, w, err, partsGroups(2)...)
	const old = "the earlier output\n"
	if err := os.WriteFile(to, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := FileInput(src)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Convert(ctx, in, to, WriterOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Convert after cancel: %v, want context.Canceled", err)
	}
	if got, _ := os.ReadFile(to); string(got) != old {
		t.Errorf("--to is now %q, want it untouched", got)
	}
}
