package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
)

// An export that fails, or reads a job's stream that does not exist, leaves
// an existing --to as it was (#30): before, a job with no groups stream
// exported 0, exit 0, and truncated --to; a failed read removed it.
func TestExportFailureLeavesOutputUntouched(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	const content = "{\"precious\": true}\n"
	writeGood := func() {
		if err := os.WriteFile(good, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	untouched := func(what string) {
		t.Helper()
		if got, err := os.ReadFile(good); err != nil || string(got) != content {
			t.Errorf("%s: --to is now %q (%v), want it untouched", what, got, err)
		}
		leftovers, _ := filepath.Glob(filepath.Join(dir, ".good.jsonl.tmp-*"))
		if len(leftovers) > 0 {
			t.Errorf("%s: temporary files left: %v", what, leftovers)
		}
	}

	// A file input that fails on its third line.
	bad := filepath.Join(dir, "bad.jsonl")
	w, err := export.CreateTrajectories(bad, export.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(exportGroup("j", 0, 2).Trajectories...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(bad, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{not json\n")
	f.Close()
	writeGood()
	if _, _, err := runToolrl(t, "export", "--from", bad, "--to", good); err == nil {
		t.Error("export of a corrupt file: no error")
	}
	untouched("a corrupt input")

	// A job that exists (it has prompts) but has no groups stream, nor an
	// advantages stream.
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := srv.Client(t)
	keys := stream.JobKeys("only-prompts")
	if err := client.XAdd(context.Background(), &goredis.XAddArgs{Stream: keys.Prompts, Values: []any{"k", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	for _, which := range []string{"groups", "advantages"} {
		writeGood()
		var out, errb bytes.Buffer
		code := run([]string{"export", "--from", "redis://" + srv.Addr, "--job", "only-prompts", "--stream", which, "--to", good}, &out, &errb)
		want := "no stream toolrl:{only-prompts}:" + which
		if code != exitUsage || !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "jobs found: only-prompts") {
			t.Errorf("--stream %s of a job without it: exit %d, want %d and %q\n%s", which, code, exitUsage, want, errb.String())
		}
		untouched("--stream " + which + " of a job without it")
	}
}

// A failed offline advantage pass leaves an existing --out as it was (#30).
func TestAdvantageFailureLeavesOutputUntouched(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "bad.jsonl"), filepath.Join(dir, "adv.jsonl")
	const content = "{\"precious\": true}\n"
	if err := os.WriteFile(in, []byte("{bad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runToolrl(t, "advantage", "--in", in, "--out", out); err == nil {
		t.Fatal("advantage over a corrupt input: no error")
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != content {
		t.Errorf("--out is now %q (%v), want it untouched", got, err)
	}
}

// A whole-file output is replaced by a rename, never truncated and
// rewritten in place (#30): an earlier output hard-linked elsewhere (a copy
// kept with cp -l, a snapshot) keeps its content. Before, plot --table
// truncated the shared file.
func TestPlotTableReplacesTheFile(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "calc-smoke")
	writePlotRun(t, run, 6, 0)
	table, kept := filepath.Join(dir, "table.md"), filepath.Join(dir, "kept.md")
	const old = "the table of an earlier run\n"
	if err := os.WriteFile(kept, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(kept, table); err != nil {
		t.Skip("no hard links here:", err)
	}
	if _, stderr, err := runToolrl(t, "plot", run, "--table", table); err != nil {
		t.Fatalf("plot: %v\n%s", err, stderr)
	}
	if got, _ := os.ReadFile(kept); string(got) != old {
		t.Errorf("the earlier table, linked elsewhere, is now %q", got)
	}
	if got, _ := os.ReadFile(table); len(got) == 0 || string(got) == old {
		t.Errorf("--table holds %q, want the new table", got)
	}
}
