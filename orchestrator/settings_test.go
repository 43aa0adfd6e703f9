package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/stream"
)

func readSettings(t *testing.T, out string) sink.Settings {
	t.Helper()
	var s sink.Settings
	if err := json.Unmarshal(readAll(t, sink.SettingsPath(out)), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// mismatchKeys returns the keys a SettingsMismatchError names, or fails.
func mismatchKeys(t *testing.T, err error) []string {
	t.Helper()
	var mm *sink.SettingsMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("err = %v, want a SettingsMismatchError", err)
	}
	var keys []string
	for _, d := range mm.Diffs {
		keys = append(keys, d.Key)
	}
	return keys
}

// TestResumeWithOtherSettingsIsRefused resumes a JSONL and a Parquet output
// with another seed, temperature and group size: refused naming each key
// with both values and leaving the output as it was; another --limit
// resumes; ForceResume appends and records the new settings.
func TestResumeWithOtherSettingsIsRefused(t *testing.T) {
	model := tinyPolicy(t)
	prompts := writePrompts(t, 3)
	for _, ext := range []string{"jsonl", "parquet"} {
		t.Run(ext, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r."+ext)
			job := tinyJob(model, prompts, out)
			job.Limit = setting.Of(1)
			if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
				t.Fatal(err)
			}
			rec := readSettings(t, out)
			if rec.Values["seed"] != "11" || rec.Values["sampling.temperature"] != "1" || rec.Values["group_size"] != "4" {
				t.Fatalf("recorded settings %v", rec.Values)
			}
			for _, k := range []string{"limit", "batch", "threads", "policy_version", "out", "resume"} {
				if _, ok := rec.Values[k]; ok {
					t.Errorf("%s is recorded as a setting; it does not change what a group holds", k)
				}
			}
			before := readAll(t, out)

			other := job
			other.Seed, other.Sampling.Temperature, other.GroupSize = setting.Of[uint64](12), setting.Of(0.7), setting.Of(2)
			_, err := quietRun(t, context.Background(), other, RunOptions{})
			if got := strings.Join(mismatchKeys(t, err), ","); got != "group_size,sampling.temperature,seed" {
				t.Errorf("differing keys %s, want group_size,sampling.temperature,seed", got)
			}
			for _, want := range []string{"resume " + out, "sampling.temperature 1 → 0.7", "seed 11 → 12", "group_size 4 → 2", "--force-resume"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if !bytes.Equal(readAll(t, out), before) {
				t.Error("a refused resume changed the output")
			}

			// Another --limit (and batch) is not another setting.
			job.Limit, job.Batch = setting.Of(2), setting.Of(4)
			sum, err := quietRun(t, context.Background(), job, RunOptions{})
			if err != nil {
				t.Fatalf("resume with another limit: %v", err)
			}
			if sum.GroupsResumed != 1 || sum.GroupsWritten != 1 {
				t.Fatalf("resumed %d, wrote %d; want 1 and 1", sum.GroupsResumed, sum.GroupsWritten)
			}

			other.ForceResume, other.Limit = setting.Of(true), setting.Of(3)
			var log lockedLog
			sum, err = loggedRun(context.Background(), other, RunOptions{}, &log)
			logs := log.buf.String()
			if err != nil {
				t.Fatalf("force resume: %v", err)
			}
			if sum.GroupsResumed != 2 || sum.GroupsWritten != 1 {
				t.Fatalf("forced: resumed %d, wrote %d; want 2 and 1", sum.GroupsResumed, sum.GroupsWritten)
			}
			if !strings.Contains(logs, "force resume") || !strings.Contains(logs, "seed=\"11 → 12\"") {
				t.Errorf("force resume logged no warning naming the settings: %s", logs)
			}
			rec = readSettings(t, out)
			if rec.Values["seed"] != "12" || len(rec.Replaced) != 1 || rec.Replaced[0]["seed"] != "11" {
				t.Errorf("after force resume the record holds seed %s and replaced %v; want 12, and 11 replaced", rec.Values["seed"], rec.Replaced)
			}
			// The forced settings are now the output's: a plain resume with them goes on.
			other.ForceResume = setting.Of(false)
			if _, err := quietRun(t, context.Background(), other, RunOptions{}); err != nil {
				t.Fatalf("resume with the recorded (forced) settings: %v", err)
			}
		})
	}
}

// TestResumeOfAnOutputWithoutSettings resumes an output written before
// settings records existed: it goes on with a warning and records them.
func TestResumeOfAnOutputWithoutSettings(t *testing.T) {
	model := tinyPolicy(t)
	out := filepath.Join(t.TempDir(), "old.jsonl")
	job := tinyJob(model, writePrompts(t, 2), out)
	job.Limit = setting.Of(1)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(sink.SettingsPath(out)); err != nil {
		t.Fatal(err)
	}
	job.Limit, job.Seed = setting.Of(0), setting.Of[uint64](99) // nothing to compare with: not refused
	var log lockedLog
	sum, err := loggedRun(context.Background(), job, RunOptions{}, &log)
	logs := log.buf.String()
	if err != nil {
		t.Fatalf("resume of an output without settings: %v", err)
	}
	if sum.GroupsResumed != 1 || sum.GroupsWritten != 1 {
		t.Fatalf("resumed %d, wrote %d; want 1 and 1", sum.GroupsResumed, sum.GroupsWritten)
	}
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "no settings record") {
		t.Errorf("no warning about the missing settings record: %s", logs)
	}
	if got := readSettings(t, out).Values["seed"]; got != "99" {
		t.Errorf("recorded seed %s, want this run's 99", got)
	}
}

// TestFreshRunReplacesTheSettings: --resume=false replaces the output and
// its record, whatever the old settings.
func TestFreshRunReplacesTheSettings(t *testing.T) {
	model := tinyPolicy(t)
	out := filepath.Join(t.TempDir(), "f.jsonl")
	job := tinyJob(model, writePrompts(t, 1), out)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	no := false
	job.Resume, job.Seed = setting.Of(no), setting.Of[uint64](5)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readSettings(t, out).Values["seed"]; got != "5" {
		t.Errorf("recorded seed %s, want the fresh run's 5", got)
	}
}

// TestWorkerWithOtherSettingsIsRefused: the first worker of a distributed
// job records the job's settings in toolrl:{job}:settings; a worker started
// with another temperature is refused naming it, one with another batch
// is not.
func TestWorkerWithOtherSettingsIsRefused(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	model := tinyPolicy(t)
	ctx := context.Background()
	client := srv.Client(t)
	const job = "fp"
	set, err := prompt.ReadFile(writePrompts(t, 2), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt.Enqueue(ctx, client, job, set.Prompts[:1]); err != nil {
		t.Fatal(err)
	}
	worker := func(spec Job) error {
		feed, err := prompt.NewRedisFeed(ctx, client, prompt.RedisFeedOptions{Job: job})
		if err != nil {
			t.Fatal(err)
		}
		_, err = quietRun(t, ctx, spec, RunOptions{Feed: feed})
		return err
	}
	spec := tinyJob(model, "redis", srv.URL())
	spec.ID = setting.Of(job)
	if err := worker(spec); err != nil {
		t.Fatal(err)
	}
	data, err := client.Get(ctx, stream.JobKeys(job).Settings).Bytes()
	if err != nil {
		t.Fatalf("no settings key after the first worker: %v", err)
	}
	var rec sink.Settings
	if err := json.Unmarshal(data, &rec); err != nil || rec.Values["sampling.temperature"] != "1" {
		t.Fatalf("settings key %s: %v", data, err)
	}
	if _, ok := rec.Values["prompts"]; ok {
		t.Error("a worker recorded a prompts file; its prompts come from the stream")
	}

	if _, err := prompt.Enqueue(ctx, client, job, set.Prompts[1:]); err != nil {
		t.Fatal(err)
	}
	hot := spec
	hot.Sampling.Temperature = setting.Of[float64](0.7)
	err = worker(hot)
	if got := strings.Join(mismatchKeys(t, err), ","); got != "sampling.temperature" {
		t.Errorf("differing keys %s, want sampling.temperature", got)
	}
	if !strings.Contains(err.Error(), stream.JobKeys(job).Settings) || !strings.Contains(err.Error(), "another --job") {
		t.Errorf("error %q does not name the settings key and the way out", err)
	}
	if n, _ := client.XLen(ctx, stream.JobKeys(job).Groups).Result(); n != 1 {
		t.Errorf("groups stream holds %d entries after the refused worker, want 1", n)
	}
	spec.Batch = setting.Of(4)
	if err := worker(spec); err != nil {
		t.Fatalf("worker with another batch: %v", err)
	}
	if n, _ := client.XLen(ctx, stream.JobKeys(job).Groups).Result(); n != 2 {
		t.Errorf("groups stream holds %d entries, want 2", n)
	}
}

// TestSettingsRecordSaysWhichLayerSetEachValue: the record holds each
// value's source; the same values from another layer resume (sources are
// not compared).
func TestSettingsRecordSaysWhichLayerSetEachValue(t *testing.T) {
	model := tinyPolicy(t)
	out := filepath.Join(t.TempDir(), "src.jsonl")
	job := tinyJob(model, writePrompts(t, 2), out)
	job.Limit = setting.Of(1)
	job.Sampling.Temperature = setting.From(0.7, setting.Flag)
	job.Rewards.CallCost = setting.From(-0.2, setting.Override)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := readSettings(t, out)
	for key, want := range map[string]string{"sampling.temperature": "flag", "rewards.call_cost": "--set", "group_size": "code", "limits.max_turns": "default", "rewards.outcome": "default"} {
		if rec.Sources[key] != want {
			t.Errorf("%s recorded from %q, want %q (sources %v)", key, rec.Sources[key], want, rec.Sources)
		}
	}
	if _, ok := rec.Sources["batch"]; ok {
		t.Error("batch has a source but is not a recorded setting")
	}
	job.Limit = setting.Of(2)
	job.Sampling.Temperature = setting.From(0.7, setting.File)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatalf("resume with the same values from another layer: %v", err)
	}
	if got := readSettings(t, out).Sources["sampling.temperature"]; got != "flag" {
		t.Errorf("a resume rewrote the record's sources: temperature from %q", got)
	}
}
