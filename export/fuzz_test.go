package export

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj/wire"
)

// FuzzParquetRoundTrip takes a JSON trajectory line; when traj accepts it,
// the Parquet round trip must give back the same JSON bytes.
// Run: go test ./export -run '^$' -fuzz FuzzParquetRoundTrip -fuzztime 60s
func FuzzParquetRoundTrip(f *testing.F) {
	ts, _ := genRecords(9, 8)
	for _, t := range append(edgeTrajectories(), ts...) {
		line, err := wire.EncodeTrajectory(&t)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		in, err := wire.DecodeTrajectory(line)
		if err != nil {
			return
		}
		want, err := wire.EncodeTrajectory(&in)
		if err != nil {
			return // e.g. invalid raw JSON that traj does not check
		}
		var parts []string
		for p := range in.Reward.Parts {
			if checkPartName(p) != nil {
				return // not a column name; the writer refuses it by design
			}
			parts = append(parts, p)
		}
		path := filepath.Join(t.TempDir(), "f.parquet")
		w, err := CreateTrajectories(path, WriterOptions{RewardParts: parts})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(in); err != nil {
			t.Fatalf("Write of a valid trajectory: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := OpenTrajectories(path)
		got := trajtest.ReadAll(t, r, err)
		if len(got) != 1 {
			t.Fatalf("read %d records", len(got))
		}
		data, err := wire.EncodeTrajectory(&got[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want) {
			t.Fatalf("round trip changed the record:\n got %s\nwant %s", data, want)
		}
	})
}
