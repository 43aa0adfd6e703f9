package export

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// The testdata/v1-* files were written by toolrl before schema v2 (commit
// 533ed20, from edgeTrajectories/edgeAdvantages and genRecords(3, 8)): v1
// JSONL lines, and Parquet files without a temperature column whose
// toolrl.schema is v1.

// readV1Lines decodes a v1 (or v2) JSONL fixture with traj's codec: the
// reference. The lines it returns are the records as toolrl writes them now
// (v3's names, the schema kept), after checking that each fixture line
// spells its fields the old way.
func readV1Lines[T any](t *testing.T, path string, unmarshal func([]byte) (T, error)) ([]T, [][]byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []T
	var lines [][]byte
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		rec, err := unmarshal(line)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !bytes.Contains(line, []byte(`"loss_mask":`)) || bytes.Contains(line, []byte(`"response_mask":`)) {
			t.Fatalf("%s: a line without v2's loss_mask: not a fixture from before v3", path)
		}
		var again []byte
		switch r := any(&rec).(type) {
		case *traj.Trajectory:
			again, err = wire.EncodeTrajectory(r)
		case *traj.AdvantageRecord:
			again, err = wire.EncodeRecord(r)
		}
		if err != nil || again == nil {
			t.Fatalf("%s: re-encode: %v", path, err)
		}
		recs, lines = append(recs, rec), append(lines, again)
	}
	return recs, lines
}

// TestV1FilesStillRead: v1 files of both kinds, JSONL and Parquet, are
// detected and read as v1 records without temperature, and the Parquet file
// (no temperature column) reads to exactly what its JSONL twin holds.
func TestV1FilesStillRead(t *testing.T) {
	ts, tlines := readV1Lines(t, "testdata/v1-trajectories.jsonl", wire.DecodeTrajectory)
	for _, tr := range ts {
		if tr.Schema != traj.TrajectorySchemaV1 || tr.Temperature != nil {
			t.Fatalf("%s: schema %s temperature %v", tr.ID, tr.Schema, tr.Temperature)
		}
	}
	as, alines := readV1Lines(t, "testdata/v1-advantages.jsonl", wire.DecodeRecord)
	for _, a := range as {
		if a.Schema != traj.AdvantageSchemaV1 || a.Temperature != nil {
			t.Fatalf("%s: schema %s temperature %v", a.TrajectoryID, a.Schema, a.Temperature)
		}
	}
	for _, ext := range []string{".jsonl", ".parquet"} {
		t.Run(ext, func(t *testing.T) {
			tpath, apath := "testdata/v1-trajectories"+ext, "testdata/v1-advantages"+ext
			if kind, err := DetectKind(tpath); err != nil || kind != Trajectories {
				t.Errorf("DetectKind(%s) = %v, %v", tpath, kind, err)
			}
			if kind, err := DetectKind(apath); err != nil || kind != Advantages {
				t.Errorf("DetectKind(%s) = %v, %v", apath, kind, err)
			}
			tr, err := OpenTrajectories(tpath)
			compareRecords(t, trajtest.ReadAll(t, tr, err), ts, wire.EncodeTrajectory, tlines)
			ar, err := OpenAdvantages(apath)
			compareRecords(t, trajtest.ReadAll(t, ar, err), as, wire.EncodeRecord, alines)
			if _, err := ScanRewardParts(apath); err != nil {
				t.Errorf("ScanRewardParts(%s): %v", apath, err)
			}
		})
	}
}

// TestV1RecordsConvertToV2Parquet: a v1 record written to Parquet (toolrl
// export of old JSONL) lands in a v2 file with a null temperature and reads
// back as v2 without temperature, otherwise unchanged; JSONL passes v1
// through as it is.
func TestV1RecordsConvertToV2Parquet(t *testing.T) {
	ts, tlines := readV1Lines(t, "testdata/v1-trajectories.jsonl", wire.DecodeTrajectory)
	dir := t.TempDir()
	jpath := filepath.Join(dir, "t.jsonl")
	w, err := CreateTrajectories(jpath, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, ts)
	r, err := OpenTrajectories(jpath)
	compareRecords(t, trajtest.ReadAll(t, r, err), ts, wire.EncodeTrajectory, tlines)

	ppath := filepath.Join(dir, "t.parquet")
	if w, err = CreateTrajectories(ppath, WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, ts)
	info, err := Stat(ppath)
	if err != nil || info.Metadata[MetaSchema] != traj.TrajectorySchema {
		t.Fatalf("Stat: %s = %q, %v; want %s", MetaSchema, info.Metadata[MetaSchema], err, traj.TrajectorySchema)
	}
	r, err = OpenTrajectories(ppath)
	got := trajtest.ReadAll(t, r, err)
	if len(got) != len(ts) {
		t.Fatalf("read %d records, wrote %d", len(got), len(ts))
	}
	for i := range got {
		if got[i].Schema != traj.TrajectorySchema || got[i].Temperature != nil {
			t.Fatalf("record %d: schema %s temperature %v, want v2 without", i, got[i].Schema, got[i].Temperature)
		}
		got[i].Schema = traj.TrajectorySchemaV1
		if !reflect.DeepEqual(got[i], ts[i]) {
			t.Fatalf("record %d differs: %s", i, firstDifference(reflect.ValueOf(got[i]), reflect.ValueOf(ts[i]), "record"))
		}
	}
}

// TestTemperatureColumn: the temperature column is a nullable DOUBLE in both
// kinds, and greedy (0), sampled and unknown (null) values all come back as
// written (the round-trip tests compare every record; this checks the
// fixtures hold all three).
func TestTemperatureColumn(t *testing.T) {
	for _, kind := range []Kind{Trajectories, Advantages} {
		cols, err := ParquetColumns(kind, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range cols {
			if c.Name == "temperature" {
				found = true
				if c.Type != "float64?" {
					t.Errorf("%s: temperature is %s, want float64?", kind, c.Type)
				}
			}
		}
		if !found {
			t.Errorf("%s: no temperature column in %v", kind, cols)
		}
	}
	seen := map[string]bool{}
	for _, tr := range allTrajectories() {
		switch {
		case tr.Temperature == nil:
			seen["null"] = true
		case *tr.Temperature == 0:
			seen["greedy"] = true
		default:
			seen["sampled"] = true
		}
	}
	if len(seen) != 3 {
		t.Errorf("fixtures hold temperatures %v, want null, greedy and sampled", seen)
	}
	in := allAdvantages()
	path := filepath.Join(t.TempDir(), "a.parquet")
	w, err := CreateAdvantages(path, WriterOptions{RewardParts: testParts})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, in)
	r, err := OpenAdvantages(path)
	got := trajtest.ReadAll(t, r, err)
	for i := range in {
		if !reflect.DeepEqual(got[i].Temperature, in[i].Temperature) {
			t.Fatalf("record %d: temperature %v, wrote %v", i, got[i].Temperature, in[i].Temperature)
		}
	}
}

// The testdata/v2-pre-iteration-* files were written by toolrl at commit
// df2fda6 (schema v2 with temperature, before the iteration column):
// `toolrl rollout --model models/calc --limit 2 --group-size 4 --seed 3
// --job pre`, `toolrl advantage` on it, and `toolrl export` of both to
// Parquet.

// TestFilesWithoutIterationRead: Parquet files written before the iteration
// column read as iteration 0, exactly as their JSONL twins decode.
func TestFilesWithoutIterationRead(t *testing.T) {
	ts, tlines := readV1Lines(t, "testdata/v2-pre-iteration-trajectories.jsonl", wire.DecodeTrajectory)
	as, alines := readV1Lines(t, "testdata/v2-pre-iteration-advantages.jsonl", wire.DecodeRecord)
	for _, path := range []string{"testdata/v2-pre-iteration-trajectories.parquet", "testdata/v2-pre-iteration-advantages.parquet"} {
		info, err := Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range info.Columns {
			if c.Name == "iteration" {
				t.Fatalf("%s has an iteration column: not a fixture from before it", path)
			}
		}
	}
	tr, err := OpenTrajectories("testdata/v2-pre-iteration-trajectories.parquet")
	got := trajtest.ReadAll(t, tr, err)
	compareRecords(t, got, ts, wire.EncodeTrajectory, tlines)
	ar, err := OpenAdvantages("testdata/v2-pre-iteration-advantages.parquet")
	gotA := trajtest.ReadAll(t, ar, err)
	compareRecords(t, gotA, as, wire.EncodeRecord, alines)
	for i := range got {
		if got[i].Iteration != 0 || got[i].Temperature == nil {
			t.Fatalf("trajectory %s: iteration %d temperature %v, want 0 and set", got[i].ID, got[i].Iteration, got[i].Temperature)
		}
	}
	for i := range gotA {
		if gotA[i].Iteration != 0 {
			t.Fatalf("record %s: iteration %d, want 0", gotA[i].TrajectoryID, gotA[i].Iteration)
		}
	}
}

// TestIterationColumn: both kinds have an int64 iteration column, and the
// fixtures' iterations (0 and later ones) come back as written.
func TestIterationColumn(t *testing.T) {
	for _, kind := range []Kind{Trajectories, Advantages} {
		cols, err := ParquetColumns(kind, nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(cols, func(c Column) bool { return c.Name == "iteration" })
		if i < 0 || cols[i].Type != "int64" {
			t.Errorf("%s: iteration column %v, want int64 (columns %v)", kind, i, cols)
		}
	}
	in := allTrajectories()
	seen := map[int]bool{}
	for _, tr := range in {
		seen[tr.Iteration] = true
	}
	if len(seen) < 3 {
		t.Fatalf("fixtures hold iterations %v, want 0 and later ones", seen)
	}
	path := filepath.Join(t.TempDir(), "t.parquet")
	w, err := CreateTrajectories(path, WriterOptions{RewardParts: testParts})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, in)
	r, err := OpenTrajectories(path)
	got := trajtest.ReadAll(t, r, err)
	for i := range in {
		if got[i].Iteration != in[i].Iteration || got[i].GroupID != in[i].GroupID {
			t.Fatalf("record %d: iteration %d of %s, wrote %d of %s", i, got[i].Iteration, got[i].GroupID, in[i].Iteration, in[i].GroupID)
		}
	}
}
