package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// readerDump is what scripts/export/check.mjs (DuckDB) and
// check-hyparquet.mjs print.
type readerDump struct {
	Metadata map[string]string `json:"metadata"`
	Columns  []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"columns"`
	Rows []map[string]any `json:"rows"`
}

// thirdPartyReaders are the node scripts that read a Parquet file with a
// reader independent of parquet-go, and the npm package each needs.
var thirdPartyReaders = []struct{ name, script, pkg string }{
	{"duckdb", "check.mjs", filepath.Join("@duckdb", "node-api")},
	{"hyparquet", "check-hyparquet.mjs", "hyparquet"},
}

// runNodeScript runs scripts/export/SCRIPT with args and returns its
// stdout. It skips the test (fails it under CI=true) when the npm package pkg
// or node is missing.
func runNodeScript(t *testing.T, script, pkg string, args ...string) []byte {
	t.Helper()
	dir := filepath.Join(testsupport.RepoRoot(t), "scripts", "export")
	_, node := testsupport.NodePackage(t, pkg)
	cmd := exec.Command(node, append([]string{filepath.Join(dir, script)}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s %v: %v\n%s", script, args, err, stderr.String())
	}
	return out
}

// readWith runs a reader script on a Parquet file and decodes what it prints.
func readWith(t *testing.T, script, pkg, path string) readerDump {
	t.Helper()
	out := runNodeScript(t, script, pkg, path)
	var dump readerDump
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&dump); err != nil {
		t.Fatalf("decode the output of %s: %v", script, err)
	}
	return dump
}

// The expected rows below are built from the records' fields directly, not
// through rows.go, so that the check is independent of the writer.

func floats32(v []float32) any {
	if v == nil {
		return nil
	}
	out := make([]any, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}

func floats64(v []float64) any {
	if v == nil {
		return nil
	}
	out := make([]any, len(v))
	for i, f := range v {
		out[i] = f
	}
	return out
}

func ints32(v []int32) any {
	if v == nil {
		return nil
	}
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

func mask(v traj.Mask) any {
	if v == nil {
		return nil
	}
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

func rawText(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

func segments(segs []traj.Segment) any {
	if segs == nil {
		return nil
	}
	out := make([]any, len(segs))
	for i, s := range segs {
		m := map[string]any{"kind": string(s.Kind), "turn": int64(s.Turn), "start": int64(s.Start), "end": int64(s.End),
			"text": s.Text, "call": nil, "result": nil}
		if c := s.Call; c != nil {
			m["call"] = map[string]any{"name": c.Name, "arguments": rawText(c.Arguments), "raw": c.Raw, "parse_error": c.ParseError}
		}
		if r := s.Result; r != nil {
			m["result"] = map[string]any{"ok": r.OK, "error_class": r.ErrorClass, "error": r.Error, "content": r.Content,
				"latency_ms": r.LatencyMS, "truncated": r.Truncated, "fault": nil}
			if r.Fault != "" {
				m["result"].(map[string]any)["fault"] = r.Fault
			}
		}
		out[i] = m
	}
	return out
}

// float64Ptr is a nullable DOUBLE column's value.
func float64Ptr(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

func nilIfEmpty[E any](v []E) []E {
	if len(v) == 0 {
		return nil
	}
	return v
}

func addParts(row map[string]any, parts map[string]float64, names []string) {
	for _, name := range names {
		if v, ok := parts[name]; ok {
			row["reward_"+name] = v
		} else {
			row["reward_"+name] = nil
		}
	}
}

func expectedAdvantageRow(a traj.AdvantageRecord, parts []string) map[string]any {
	row := map[string]any{
		"trajectory_id": a.TrajectoryID, "group_id": a.GroupID, "iteration": int64(a.Iteration), "sample_index": int64(a.SampleIndex),
		"policy_version": a.PolicyVersion, "temperature": float64Ptr(a.Temperature), "prompt_len": int64(a.PromptLen), "input_ids": ints32(a.InputIDs),
		"response_mask": mask(a.LossMask), "rollout_log_probs": floats32(a.OldLogprobs), "ref_log_prob": floats32(nilIfEmpty(a.RefLogprobs)),
		"advantages": floats32(a.Advantages), "kl": floats32(nilIfEmpty(a.KL)), "kl_estimator": a.KLEstimator,
		"reward": a.Reward.Total, "step_rewards": floats64(nilIfEmpty(a.StepRewards)), "mode": a.Mode, "estimator": a.Estimator,
		"zero_variance": a.ZeroVariance, "stale": a.Stale, "segments": segments(nilIfEmpty(a.Segments)),
	}
	addParts(row, a.Reward.Parts, parts)
	return row
}

func expectedTrajectoryRow(t traj.Trajectory, parts []string) map[string]any {
	row := map[string]any{
		"id": t.ID, "job_id": t.JobID, "prompt_id": t.PromptID, "iteration": int64(t.Iteration), "group_id": t.GroupID, "group_size": int64(t.GroupSize),
		"sample_index": int64(t.SampleIndex), "policy_version": t.PolicyVersion, "seed": t.Seed, "temperature": float64Ptr(t.Temperature),
		"model_name": t.Model.Name, "model_hash": t.Model.Hash, "model_quantization": t.Model.Quantization, "prompt_len": int64(t.PromptLen),
		"input_ids": ints32(t.Tokens), "response_mask": mask(t.LossMask), "rollout_log_probs": floats32(t.Logprobs),
		"ref_log_prob": floats32(nilIfEmpty(t.RefLogprobs)), "finish_reason": string(t.FinishReason), "reward": t.Reward.Total,
		"step_rewards": floats64(nilIfEmpty(t.StepRewards)), "answer": t.Answer, "meta": rawText(t.Meta),
		"segments": segments(t.Segments),
	}
	addParts(row, t.Reward.Parts, parts)
	return row
}

// sameValue compares an expected Go value with what a reader printed: BIGINTs
// come as strings, other numbers as JSON numbers.
func sameValue(want, got any) error {
	switch w := want.(type) {
	case nil:
		if got != nil {
			return fmt.Errorf("want null, got %v", got)
		}
	case string, bool:
		if got != want {
			return fmt.Errorf("want %q, got %v", want, got)
		}
	case int64, uint64:
		s := fmt.Sprint(got)
		if s != fmt.Sprint(w) {
			return fmt.Errorf("want %v, got %v", w, got)
		}
	case float64:
		n, ok := got.(json.Number)
		if !ok {
			return fmt.Errorf("want %v, got %v (%T)", w, got, got)
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || f != w {
			return fmt.Errorf("want %v, got %v", w, n)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("want a list of %d, got %v", len(w), got)
		}
		for i := range w {
			if err := sameValue(w[i], g[i]); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("want a struct of %d fields, got %v", len(w), got)
		}
		for k := range w {
			if err := sameValue(w[k], g[k]); err != nil {
				return fmt.Errorf(".%s: %w", k, err)
			}
		}
	default:
		return fmt.Errorf("test bug: unexpected %T", want)
	}
	return nil
}

func checkDump(t *testing.T, dump readerDump, schema string, want []map[string]any) {
	t.Helper()
	if dump.Metadata[MetaSchema] != schema {
		t.Errorf("reads %s = %q, want %q", MetaSchema, dump.Metadata[MetaSchema], schema)
	}
	if len(dump.Rows) != len(want) {
		t.Fatalf("reads %d rows, want %d", len(dump.Rows), len(want))
	}
	var names []string
	for _, c := range dump.Columns {
		names = append(names, c.Name)
	}
	var wantNames []string
	for k := range want[0] {
		wantNames = append(wantNames, k)
	}
	slices.Sort(wantNames)
	sorted := slices.Sorted(slices.Values(names))
	if !reflect.DeepEqual(sorted, wantNames) {
		t.Fatalf("columns %v, want %v", names, wantNames)
	}
	values := 0
	for i := range want {
		for col, w := range want[i] {
			if err := sameValue(w, dump.Rows[i][col]); err != nil {
				t.Fatalf("row %d column %s: %v", i+1, col, err)
			}
			values++
		}
	}
	t.Logf("the reader returned the same %d column values (lists element by element) in %d rows", values, len(want))
}

// TestThirdPartyReadersReadOurParquet writes every fixture to Parquet and
// checks that DuckDB and hyparquet, two Parquet implementations independent
// of parquet-go (C++ and JavaScript), read back every value, nulls and empty
// lists included, and the schema metadata.
func TestThirdPartyReadersReadOurParquet(t *testing.T) {
	dir := t.TempDir()
	advantages, _ := viaJSON(t, allAdvantages(), wire.EncodeRecord, wire.DecodeRecord)
	apath := filepath.Join(dir, "advantages.parquet")
	aw, err := CreateAdvantages(apath, WriterOptions{RowsPerGroup: 32, RewardParts: testParts})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, aw, advantages)
	var wantA []map[string]any
	for _, a := range advantages {
		wantA = append(wantA, expectedAdvantageRow(a, testParts))
	}

	trajectories, _ := viaJSON(t, allTrajectories(), wire.EncodeTrajectory, wire.DecodeTrajectory)
	tpath := filepath.Join(dir, "trajectories.parquet")
	tw, err := CreateTrajectories(tpath, WriterOptions{RowsPerGroup: 32, RewardParts: testParts})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, tw, trajectories)
	var wantT []map[string]any
	for _, tr := range trajectories {
		wantT = append(wantT, expectedTrajectoryRow(tr, testParts))
	}

	for _, reader := range thirdPartyReaders {
		t.Run(reader.name, func(t *testing.T) {
			t.Parallel() // most of the time is node starting
			checkDump(t, readWith(t, reader.script, reader.pkg, apath), traj.AdvantageSchema, wantA)
			checkDump(t, readWith(t, reader.script, reader.pkg, tpath), traj.TrajectorySchema, wantT)
		})
	}
}

// TestReadParquetThatDuckDBRewrote checks the other direction: a file that a
// user rewrote with DuckDB (another writer, every column nullable, no toolrl
// metadata) reads back with toolrl's readers to exactly the records written.
func TestReadParquetThatDuckDBRewrote(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rewrite := func(src string) string {
		dst := strings.TrimSuffix(src, ".parquet") + "-duckdb.parquet"
		runNodeScript(t, "rewrite.mjs", filepath.Join("@duckdb", "node-api"), src, dst)
		return dst
	}

	advantages, lines := viaJSON(t, allAdvantages(), wire.EncodeRecord, wire.DecodeRecord)
	apath := filepath.Join(dir, "a.parquet")
	aw, err := CreateAdvantages(apath, WriterOptions{RewardParts: testParts})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, aw, advantages)
	rewritten := rewrite(apath)
	if kind, err := DetectKind(rewritten); err != nil || kind != Advantages {
		t.Fatalf("DetectKind of the rewritten file = %v, %v", kind, err)
	}
	r, err := OpenAdvantages(rewritten)
	compareRecords(t, trajtest.ReadAll(t, r, err), advantages, wire.EncodeRecord, lines)

	trajectories, tlines := viaJSON(t, allTrajectories(), wire.EncodeTrajectory, wire.DecodeTrajectory)
	tpath := filepath.Join(dir, "t.parquet")
	tw, err := CreateTrajectories(tpath, WriterOptions{RewardParts: testParts})
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, tw, trajectories)
	tr, err := OpenTrajectories(rewrite(tpath))
	compareRecords(t, trajtest.ReadAll(t, tr, err), trajectories, wire.EncodeTrajectory, tlines)

	// A v1 file (no temperature column) rewritten: no metadata either, so the
	// kind comes from the columns, and the records read as v2 without
	// temperature, otherwise as written.
	v1, _ := readV1Lines(t, "testdata/v1-advantages.jsonl", wire.DecodeRecord)
	src := filepath.Join(dir, "v1.parquet")
	data, err := os.ReadFile("testdata/v1-advantages.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rewritten = rewrite(src)
	if kind, err := DetectKind(rewritten); err != nil || kind != Advantages {
		t.Fatalf("DetectKind of the rewritten v1 file = %v, %v", kind, err)
	}
	r, err = OpenAdvantages(rewritten)
	got := trajtest.ReadAll(t, r, err)
	if len(got) != len(v1) {
		t.Fatalf("rewritten v1 file: %d records, want %d", len(got), len(v1))
	}
	for i := range got {
		if got[i].Schema != traj.AdvantageSchema || got[i].Temperature != nil {
			t.Fatalf("rewritten v1 record %d: schema %s temperature %v", i, got[i].Schema, got[i].Temperature)
		}
		got[i].Schema = traj.AdvantageSchemaV1
		if !reflect.DeepEqual(got[i], v1[i]) {
			t.Fatalf("rewritten v1 record %d differs: %s", i, firstDifference(reflect.ValueOf(got[i]), reflect.ValueOf(v1[i]), "record"))
		}
	}
}
