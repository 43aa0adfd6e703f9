package export

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// edgeTrajectories are hand-made corner cases on top of the random ones:
// empty responses with nil and with empty lists, JSON null meta, a call
// without arguments, extreme integers and float32 values.
func edgeTrajectories() []traj.Trajectory {
	base := func(id string) traj.Trajectory {
		t := trajtest.Trajectory(trajtest.Options{Job: "edge", Prompt: id, Model: "m", PromptTokens: []int32{5, 6}, Steps: []trajtest.Step{}}, 0)
		t.StepRewards, t.FinishReason = nil, traj.FinishLength
		return t
	}
	emptyNil := base("empty-nil") // loss_mask, logprobs, segments are null in JSON
	emptyLists := base("empty-lists")
	emptyLists.LossMask, emptyLists.Logprobs, emptyLists.Segments = traj.Mask{}, []float32{}, []traj.Segment{}
	emptyLists.RefLogprobs, emptyLists.StepRewards = []float32{}, []float64{} // omitempty: read back nil
	emptyLists.Reward.Parts = map[string]float64{}                            // omitempty: read back nil
	emptyLists.Temperature = new(float64)                                     // greedy: 0, not null
	extreme := base("extreme")
	extreme.Seed, extreme.PolicyVersion = math.MaxUint64, math.MinInt64
	extreme.Temperature = new(float64)
	*extreme.Temperature = math.SmallestNonzeroFloat64
	extreme.Tokens = []int32{math.MaxInt32, 0, 1, 2}
	extreme.PromptLen = 1
	extreme.LossMask = traj.Mask{1, 0, 1}
	extreme.Logprobs = []float32{-math.MaxFloat32, 0, -math.SmallestNonzeroFloat32}
	extreme.RefLogprobs = []float32{float32(math.Copysign(0, -1)), 0, -1e-45}
	extreme.Segments = []traj.Segment{
		{Kind: traj.SegmentModel, Start: 0, End: 1, Call: &traj.ToolCall{Name: "", Raw: ""}},
		{Kind: traj.SegmentTool, Start: 1, End: 2, Call: &traj.ToolCall{Name: "x", Raw: "<tool_call>", Arguments: json.RawMessage(`null`)},
			Result: &traj.ToolResult{Fault: "implicit"}},
		{Kind: traj.SegmentModel, Turn: 1 << 40, Start: 2, End: 3, Text: "日本語 \u0000 \"quoted\"\n"},
	}
	extreme.Reward = traj.Reward{Total: -math.MaxFloat64, Parts: map[string]float64{"outcome": math.SmallestNonzeroFloat64, "call-cost": math.Copysign(0, -1)}}
	extreme.StepRewards = []float64{1e308, -1e-308}
	extreme.Meta = json.RawMessage(`null`)
	extreme.Answer = "  spaces  "
	return []traj.Trajectory{emptyNil, emptyLists, extreme}
}

func edgeAdvantages() []traj.AdvantageRecord {
	var out []traj.AdvantageRecord
	for _, t := range edgeTrajectories() {
		a := trajtest.Record(t, 0)
		a.Estimator = "rloo"
		if len(t.RefLogprobs) > 0 {
			a.KL = make([]float32, len(t.LossMask)) // KL may come without a named estimator
			a.Advantages[0] = -3.5
		}
		out = append(out, a)
	}
	return out
}

// testParts are the reward parts of the generated records.
var testParts = []string{"outcome", "format", "tool_success", "call_cost", "call-cost"}

func allTrajectories() []traj.Trajectory {
	ts, _ := genRecords(1, 60)
	return append(edgeTrajectories(), ts...)
}

func allAdvantages() []traj.AdvantageRecord {
	_, as := genRecords(2, 60)
	return append(edgeAdvantages(), as...)
}

// viaJSON is what traj's JSON codec gives back for each record: the
// reference every format must reproduce exactly.
func viaJSON[T any](t *testing.T, recs []T, marshal func(*T) ([]byte, error), unmarshal func([]byte) (T, error)) ([]T, [][]byte) {
	t.Helper()
	out := make([]T, len(recs))
	lines := make([][]byte, len(recs))
	for i := range recs {
		data, err := marshal(&recs[i])
		if err != nil {
			t.Fatalf("marshal record %d: %v", i, err)
		}
		if out[i], err = unmarshal(data); err != nil {
			t.Fatalf("unmarshal record %d: %v\n%s", i, err, data)
		}
		lines[i] = data
	}
	return out, lines
}

func writeAll[T any](t *testing.T, w Writer[T], recs []T) {
	t.Helper()
	// Uneven batches exercise both single and batched writes.
	for start := 0; start < len(recs); {
		end := min(len(recs), start+1+start%7)
		if err := w.Write(recs[start:end]...); err != nil {
			t.Fatalf("Write: %v", err)
		}
		start = end
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func compareRecords[T any](t *testing.T, got, want []T, marshal func(*T) ([]byte, error), wantLines [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d records, wrote %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("record %d differs from its JSON round trip: %s", i, firstDifference(reflect.ValueOf(got[i]), reflect.ValueOf(want[i]), "record"))
		}
		data, err := marshal(&got[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, wantLines[i]) {
			t.Errorf("record %d encodes differently:\n got: %s\nwant: %s", i, data, wantLines[i])
		}
	}
}

func TestTrajectoriesRoundTripEveryFormat(t *testing.T) {
	in := allTrajectories()
	want, lines := viaJSON(t, in, wire.EncodeTrajectory, wire.DecodeTrajectory)
	for _, ext := range []string{".jsonl", ".jsonl.gz", ".parquet"} {
		t.Run(ext, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t"+ext)
			w, err := CreateTrajectories(path, WriterOptions{RowsPerGroup: 16})
			if err != nil {
				t.Fatal(err)
			}
			writeAll(t, w, in)
			r, err := OpenTrajectories(path)
			compareRecords(t, trajtest.ReadAll(t, r, err), want, wire.EncodeTrajectory, lines)
		})
	}
}

func TestAdvantagesRoundTripEveryFormat(t *testing.T) {
	in := allAdvantages()
	want, lines := viaJSON(t, in, wire.EncodeRecord, wire.DecodeRecord)
	for _, ext := range []string{".jsonl", ".jsonl.gz", ".parquet"} {
		t.Run(ext, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a"+ext)
			w, err := CreateAdvantages(path, WriterOptions{RowsPerGroup: 10})
			if err != nil {
				t.Fatal(err)
			}
			writeAll(t, w, in)
			r, err := OpenAdvantages(path)
			compareRecords(t, trajtest.ReadAll(t, r, err), want, wire.EncodeRecord, lines)
		})
	}
}

// TestJSONLParquetJSONLIsByteExact converts a JSONL file to Parquet and back
// and compares the files byte for byte.
func TestJSONLParquetJSONLIsByteExact(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.jsonl")
	w, err := CreateAdvantages(src, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, allAdvantages())
	pq := filepath.Join(dir, "mid.parquet")
	back := filepath.Join(dir, "back.jsonl")
	convert(t, src, pq, OpenAdvantages, CreateAdvantages)
	convert(t, pq, back, OpenAdvantages, CreateAdvantages)
	a, _ := os.ReadFile(src)
	b, _ := os.ReadFile(back)
	if !bytes.Equal(a, b) {
		t.Fatalf("JSONL → Parquet → JSONL changed the file (%d vs %d bytes)", len(a), len(b))
	}

	src = filepath.Join(dir, "t.jsonl")
	tw, err := CreateTrajectories(src, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, tw, allTrajectories())
	convert(t, src, pq, OpenTrajectories, CreateTrajectories)
	convert(t, pq, back, OpenTrajectories, CreateTrajectories)
	a, _ = os.ReadFile(src)
	b, _ = os.ReadFile(back)
	if !bytes.Equal(a, b) {
		t.Fatalf("trajectories JSONL → Parquet → JSONL changed the file (%d vs %d bytes)", len(a), len(b))
	}
}

func convert[T any](t *testing.T, from, to string, open func(string) (Reader[T], error), create func(string, WriterOptions) (Writer[T], error)) {
	t.Helper()
	r, err := open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := create(to, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(w, r); err != nil {
		t.Fatalf("copy %s → %s: %v", from, to, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWritersRejectNonFiniteValues(t *testing.T) {
	good := allAdvantages()[5]
	cases := map[string]func(a *traj.AdvantageRecord){
		"advantages[0]":        func(a *traj.AdvantageRecord) { a.Advantages[0] = float32(math.NaN()) },
		"rollout_log_probs[0]": func(a *traj.AdvantageRecord) { a.OldLogprobs[0] = float32(math.Inf(-1)) },
		"reward":               func(a *traj.AdvantageRecord) { a.Reward.Total = math.Inf(1) },
		"reward_parts.bad": func(a *traj.AdvantageRecord) {
			a.Reward.Parts = map[string]float64{"bad": math.NaN()}
		},
	}
	for field, breakIt := range cases {
		for _, ext := range []string{".jsonl", ".parquet"} {
			t.Run(field+ext, func(t *testing.T) {
				bad := cloneAdvantage(good)
				breakIt(&bad)
				path := filepath.Join(t.TempDir(), "a"+ext)
				w, err := CreateAdvantages(path, WriterOptions{RewardParts: []string{"bad"}})
				if err != nil {
					t.Fatal(err)
				}
				err = w.Write(good, bad)
				if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "not finite") {
					t.Fatalf("Write of a record with a non-finite %s: err = %v", field, err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				r, err := OpenAdvantages(path)
				if got := trajtest.ReadAll(t, r, err); len(got) != 0 {
					t.Errorf("a rejected batch wrote %d records", len(got))
				}
			})
		}
	}
}

func cloneAdvantage(a traj.AdvantageRecord) traj.AdvantageRecord {
	data, err := wire.EncodeRecord(&a)
	if err != nil {
		panic(err)
	}
	var out traj.AdvantageRecord
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

// TestParquetReaderRejectsNonFiniteRow writes a NaN behind the writer's back
// and checks that the reader names the file, row and field.
func TestParquetReaderRejectsNonFiniteRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nan.parquet")
	recs := allAdvantages()[:4]
	w, err := createParquet(path, WriterOptions{RewardParts: testParts}, advantageRows)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(recs[:3]...); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil { // fixes the columns
		t.Fatal(err)
	}
	bad := cloneAdvantage(recs[3])
	bad.Advantages[len(bad.Advantages)-1] = float32(math.NaN())
	var row advantageRow
	if err := advantageRows.toRow(&bad, &row); err != nil {
		t.Fatal(err)
	}
	enc, err := w.layout.encode(reflect.ValueOf(row), bad.Reward.Parts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.pw.Write([]any{enc}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenAdvantages(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range 3 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	_, err = r.Next()
	if err == nil || !strings.Contains(err.Error(), path+" row 4") || !strings.Contains(err.Error(), "not finite") {
		t.Fatalf("reading a NaN advantage: err = %v, want it to name %s row 4", err, path)
	}
}

func TestJSONLReaderNamesFileAndLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	ts := allTrajectories()[:2]
	var buf bytes.Buffer
	for i := range ts {
		line, _ := wire.EncodeTrajectory(&ts[i])
		buf.Write(line)
		buf.WriteString("\n\n") // blank lines are skipped but counted
	}
	buf.WriteString(`{"schema":"toolrl.trajectory/v1","id":"x","logprobs":[NaN]}` + "\n")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenTrajectories(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range 2 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), path+" line 5") {
		t.Fatalf("err = %v, want it to name %s line 5", err, path)
	}
}

func TestJSONLOfGroupsYieldsTrajectories(t *testing.T) {
	ts, _ := genRecords(3, 8)
	path := filepath.Join(t.TempDir(), "groups.jsonl.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	for i := 0; i < len(ts); i += 4 {
		g := traj.NewGroup(ts[i : i+4])
		line, err := wire.EncodeGroup(&g)
		if err != nil {
			t.Fatal(err)
		}
		gz.Write(append(line, '\n'))
	}
	gz.Close()
	f.Close()
	r, err := OpenTrajectories(path)
	got := trajtest.ReadAll(t, r, err)
	want, lines := viaJSON(t, ts, wire.EncodeTrajectory, wire.DecodeTrajectory)
	compareRecords(t, got, want, wire.EncodeTrajectory, lines)
	if kind, err := DetectKind(path); err != nil || kind != Trajectories {
		t.Errorf("DetectKind = %v, %v", kind, err)
	}
}

func TestParquetRewardColumns(t *testing.T) {
	dir := t.TempDir()
	recs := allAdvantages()[:8]
	path := filepath.Join(dir, "a.parquet")
	w, err := CreateAdvantages(path, WriterOptions{RewardParts: []string{"format", "zzz_declared"}})
	if err != nil {
		t.Fatal(err)
	}
	plain := cloneAdvantage(recs[0])
	plain.Reward.Parts = map[string]float64{"outcome": 1}
	if err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	late := cloneAdvantage(recs[1])
	late.Reward.Parts = map[string]float64{"surprise": 1}
	if err := w.Write(late); !errors.Is(err, ErrUnknownRewardPart) || !strings.Contains(err.Error(), "surprise") {
		t.Fatalf("part missing from the schema: err = %v, want ErrUnknownRewardPart naming it", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, closer, err := openParquetFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	var names []string
	for _, field := range f.Schema().Fields() {
		names = append(names, field.Name())
	}
	got := strings.Join(names, ",")
	if !strings.Contains(got, "reward,reward_format,reward_outcome,reward_zzz_declared,step_rewards") {
		t.Errorf("columns = %s, want the part columns sorted after reward", got)
	}
	if v, _ := f.Lookup(MetaSchema); v != traj.AdvantageSchema {
		t.Errorf("%s = %q", MetaSchema, v)
	}
	if v, _ := f.Lookup(MetaRewardParts); v != "format,outcome,zzz_declared" {
		t.Errorf("%s = %q", MetaRewardParts, v)
	}
	if _, err := CreateAdvantages(filepath.Join(dir, "b.parquet"), WriterOptions{RewardParts: []string{"a b"}}); err == nil {
		t.Error("a part name with a space was accepted")
	}
}

func TestParquetRowGroupsAndFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.parquet")
	ts := allTrajectories()[:25]
	w, err := CreateTrajectories(path, WriterOptions{RowsPerGroup: 10, RewardParts: testParts})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ts[:3]...); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil { // ends a row group of 3
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the destination exists before Close (err %v): readers could see a file without footer", err)
	}
	if err := w.Write(ts[3:]...); err != nil { // 22 more: 10 + 10 + 2
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, closer, err := openParquetFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	var sizes []int64
	for _, rg := range f.RowGroups() {
		sizes = append(sizes, rg.NumRows())
	}
	if !reflect.DeepEqual(sizes, []int64{3, 10, 10, 2}) {
		t.Errorf("row groups = %v, want [3 10 10 2]", sizes)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after Close, want only the file", len(entries))
	}
}

func TestOpenWrongKindOrFormat(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.parquet")
	w, err := CreateAdvantages(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, allAdvantages()[:2])
	if _, err := OpenTrajectories(path); err == nil || !strings.Contains(err.Error(), "holds advantages") {
		t.Errorf("opening advantages as trajectories: err = %v", err)
	}
	if kind, err := DetectKind(path); err != nil || kind != Advantages {
		t.Errorf("DetectKind = %v, %v", kind, err)
	}
	if _, err := CreateTrajectories(filepath.Join(dir, "x.csv"), WriterOptions{}); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("csv: err = %v, want ErrUnknownFormat", err)
	}
	junk := filepath.Join(dir, "junk.parquet")
	os.WriteFile(junk, []byte("not parquet at all"), 0o644)
	if _, err := OpenAdvantages(junk); err == nil || !strings.Contains(err.Error(), junk) {
		t.Errorf("junk parquet: err = %v", err)
	}
	if _, err := CreateAdvantages(filepath.Join(dir, "x.parquet"), WriterOptions{Append: true}); err == nil {
		t.Error("Append on parquet was accepted")
	}
}

func TestJSONLAppendCutsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	ts := allTrajectories()[:6]
	w, err := CreateTrajectories(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, ts[:3])
	// A crash in the middle of a line.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"schema":"toolrl.trajectory/v1","id":"torn`)
	f.Close()
	w, err = CreateTrajectories(path, WriterOptions{Append: true})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, ts[3:])
	r, err := OpenTrajectories(path)
	got := trajtest.ReadAll(t, r, err)
	want, lines := viaJSON(t, ts, wire.EncodeTrajectory, wire.DecodeTrajectory)
	compareRecords(t, got, want, wire.EncodeTrajectory, lines)
}

// firstDifference names the first path at which two values differ.
func firstDifference(a, b reflect.Value, path string) string {
	if a.Kind() != b.Kind() {
		return fmt.Sprintf("%s: kind %s vs %s", path, a.Kind(), b.Kind())
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v vs %v", path, a.IsNil(), b.IsNil())
		}
		if a.IsNil() {
			return ""
		}
		return firstDifference(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if d := firstDifference(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: got nil=%v, want nil=%v", path, a.IsNil(), b.IsNil())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: len %d vs %d", path, a.Len(), b.Len())
		}
		for i := 0; i < a.Len(); i++ {
			if d := firstDifference(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.IsNil() != b.IsNil() || !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return fmt.Sprintf("%s: %v (nil=%v) vs %v (nil=%v)", path, a, a.IsNil(), b, b.IsNil())
		}
		return ""
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return fmt.Sprintf("%s: %#v vs %#v", path, a.Interface(), b.Interface())
	}
	return ""
}
