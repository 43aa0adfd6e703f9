package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// runToolrl runs the CLI in-process and returns stdout, stderr and the error.
func runToolrl(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errb.String(), err
}

// exportGroup builds a valid group of n trajectories of prompt "p<prompt>"
// at policy version prompt. Each trajectory calls the calculator once (the
// call of odd samples fails) and answers; reward i with part outcome, and
// in prompt 2's group only a part late_part (-1).
func exportGroup(job string, prompt, n int) *traj.Group {
	call := &traj.ToolCall{Name: "calculator", Raw: "[CALC: 2+2]", Arguments: json.RawMessage(`{"expression":"2+2"}`)}
	return trajtest.Group(trajtest.Options{Job: job, Prompt: fmt.Sprintf("p%d", prompt), Size: n, PolicyVersion: int64(prompt), Model: "calc",
		PromptTokens: []int32{1, 2, 3}, Steps: []trajtest.Step{{Model: 2, Tool: 2, Reward: 0.5, Call: call}, {Model: 1, Text: "4"}},
		Sample: func(i int, t *traj.Trajectory) {
			t.Seed = uint64(prompt*100 + i)
			t.Segments[1].Result = &traj.ToolResult{OK: i%2 == 0, Content: "4"}
			t.Reward = traj.Reward{Total: float64(i), Parts: map[string]float64{"outcome": float64(i)}}
			if prompt == 2 {
				t.Reward.Parts["late_part"] = -1 // only in a late group
				t.Reward.Total--
			}
			t.StepRewards[1] = float64(i)
		}})
}

func TestExportConvertsFiles(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.jsonl")
	w, err := export.CreateTrajectories(src, export.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []traj.Trajectory
	for p := range 3 {
		g := exportGroup("job", p, 3)
		want = append(want, g.Trajectories...)
		if err := w.Write(g.Trajectories...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(dir, "out.parquet")
	// One row per row group: the late part would not be in the first group.
	if _, stderr, err := runToolrl(t, "export", "--from", src, "--to", pq, "--rows-per-group", "1"); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	back := filepath.Join(dir, "back.jsonl.gz")
	if _, stderr, err := runToolrl(t, "export", "--from", pq, "--to", back); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	r, err := export.OpenTrajectories(src)
	source := trajtest.ReadAll(t, r, err)
	if len(source) != len(want) {
		t.Fatalf("source holds %d trajectories, want %d", len(source), len(want))
	}
	for _, path := range []string{pq, back} {
		r, err := export.OpenTrajectories(path)
		if got := trajtest.ReadAll(t, r, err); !reflect.DeepEqual(got, source) {
			t.Errorf("%s differs from the source", path)
		}
	}
	info, err := export.Stat(pq)
	if err != nil {
		t.Fatal(err)
	}
	if info.Rows != 9 || info.RowGroups != 9 || info.Metadata[export.MetaRewardParts] != "late_part,outcome" {
		t.Errorf("parquet: %d rows, %d row groups, parts %q", info.Rows, info.RowGroups, info.Metadata[export.MetaRewardParts])
	}

	stdout, _, err := runToolrl(t, "inspect", pq)
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	for _, want := range []string{
		"records          9 trajectories in 3 groups",
		"9 rows in 9 row groups",
		"toolrl.schema = toolrl.trajectory/v3",
		"reward_late_part",
		"tool calls       9 in 18 model turns: 1.000 per record",
		"results 9, ok 0.667",
		"reward histogram",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Count(stdout, "\n  [") != 10 {
		t.Errorf("want 10 histogram bins:\n%s", stdout)
	}

	stdout, _, err = runToolrl(t, "inspect", "--json", "--bins", "3", back)
	if err != nil {
		t.Fatalf("inspect --json: %v", err)
	}
	var doc struct {
		Format  string `json:"format"`
		Columns []struct{ Name string }
		Summary export.SummaryReport
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("inspect --json output: %v\n%s", err, stdout)
	}
	var binned int64
	for _, h := range doc.Summary.Histogram {
		binned += h.Count
	}
	if doc.Format != "jsonl.gz" || doc.Summary.Records != 9 || doc.Summary.Groups != 3 || doc.Summary.Calls != 9 ||
		len(doc.Summary.Histogram) != 3 || binned != 9 || doc.Summary.RewardParts["late_part"] != -1 || len(doc.Columns) == 0 {
		t.Errorf("inspect --json: %+v", doc)
	}
}

func TestExportUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"export", "--from", filepath.Join(dir, "a.jsonl")},
		{"export", "--from", filepath.Join(dir, "a.jsonl"), "--to", filepath.Join(dir, "b.csv")},
		{"inspect", filepath.Join(dir, "a.txt")},
		{"export", "--from", filepath.Join(dir, "a.jsonl"), "--to", filepath.Join(dir, ".", "a.jsonl")},
	} {
		_, _, err := runToolrl(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: err = %v, want a usage error (exit 2)", args, err)
		}
	}
}

// TestExportFromRedis exports a job's groups stream and its advantages
// stream (export/jobstream reads them; its tests check that nothing is
// consumed), and refuses a job that is not there with a usage error.
func TestExportFromRedis(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	ctx := context.Background()
	client := srv.Client(t)
	const job = "export-job"
	keys := stream.JobKeys(job)
	producer := stream.NewProducer(client, stream.ProducerOptions{MaxBacklog: -1})
	var want []traj.Trajectory
	for p := range 3 {
		g := exportGroup(job, p, 2)
		want = append(want, g.Trajectories...)
		if ok, err := producer.AddGroup(ctx, job, g); err != nil || !ok {
			t.Fatalf("AddGroup: %v %v", ok, err)
		}
	}

	out := filepath.Join(t.TempDir(), "groups.parquet")
	if _, stderr, err := runToolrl(t, "export", "--from", "redis://"+srv.Addr+"/0", "--job", job, "--to", out); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	r, err := export.OpenTrajectories(out)
	got := trajtest.ReadAll(t, r, err)
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if !bytes.Equal(wantJSON, gotJSON) {
		t.Fatalf("exported %d trajectories, want %d, or they differ", len(got), len(want))
	}

	// The advantages stream: one record per entry, as the service writes it.
	for i := range 3 {
		rec := trajtest.Record(want[i], 1)
		payload, err := wire.EncodeRecord(&rec)
		if err != nil {
			t.Fatal(err)
		}
		var values []any
		for _, f := range stream.RecordFields(&rec, payload) {
			values = append(values, f.Name, f.Value)
		}
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Advantages, Values: values}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	advOut := filepath.Join(t.TempDir(), "adv.jsonl")
	if _, stderr, err := runToolrl(t, "export", "--from", "redis://"+srv.Addr, "--job", job, "--stream", "advantages", "--to", advOut); err != nil {
		t.Fatalf("export advantages: %v\n%s", err, stderr)
	}
	stdout, _, err := runToolrl(t, "inspect", advOut)
	if err != nil || !strings.Contains(stdout, "records          3 advantages in 2 groups") {
		t.Errorf("inspect %s: %v\n%s", advOut, err, stdout)
	}

	// A job that is not there, or no --job, is a usage error listing the
	// jobs found; before, it exported 0 records, exit 0. The URL path is the
	// database, as in every verb: a job written there (export's form before
	// #30) is refused, naming --job.
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	for _, c := range []struct{ path, job, want string }{
		{"/0", "no-such-job", "jobs found: " + job},
		{"/0", "", "needs --job JOB; jobs found: " + job},
		{"", "", "needs --job JOB; jobs found: " + job},
		{"/1", job, "jobs found: none"}, // database 1 holds nothing
		{"/" + job, "", "the URL path is the database, as in every toolrl Redis URL; name the job with --job " + job},
	} {
		args := []string{"export", "--from", "redis://" + srv.Addr + c.path, "--to", empty}
		if c.job != "" {
			args = append(args, "--job", c.job)
		}
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("export %v: exit %d, want %d and %q\n%s", args[1:], code, exitUsage, c.want, errb.String())
		}
	}
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused export created --to: %v", err)
	}
}
