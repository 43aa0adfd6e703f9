package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/tinymodel"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

func runAdvantageCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newAdvantageCmd()
	cmd.SetArgs(args)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), err
}

// advGroups are the two groups of three the advantage tests score, prompts
// a (rewards 0, 1, 2) and b (0, 1, 0) of job j: a 3-token prompt, a model
// step, a 2-token tool result and a final model step (step rewards 0.1 and
// the reward less 0.1), tokens below 300 and different in each sample.
func advGroups() []*traj.Group {
	var gs []*traj.Group
	for p, rewards := range map[string][]float64{"a": {0, 1, 2}, "b": {0, 1, 0}} {
		gs = append(gs, trajtest.Group(trajtest.Options{Job: "j", Prompt: p, Model: "tiny", PromptTokens: []int32{1, 40, 41}, Rewards: rewards,
			Steps: []trajtest.Step{{Model: 2, Tool: 2, Reward: 0.1, Result: &traj.ToolResult{OK: true, Content: "4"}}, {Model: 1}},
			Sample: func(i int, t *traj.Trajectory) {
				t.Tokens[3], t.Tokens[7] = int32(50+i), int32(70+i)
				t.StepRewards[1] = t.Reward.Total - t.StepRewards[0] // the steps sum to the total, as the rollout writes
			}}))
	}
	slices.SortFunc(gs, func(x, y *traj.Group) int { return strings.Compare(x.GroupID, y.GroupID) })
	return gs
}

// writeAdvInput writes advGroups, members interleaved, and returns them in
// file order.
func writeAdvInput(t *testing.T, path string) []traj.Trajectory {
	t.Helper()
	var trs []traj.Trajectory
	gs := advGroups()
	for i := range gs[0].Trajectories {
		trs = append(trs, gs[0].Trajectories[i], gs[1].Trajectories[i])
	}
	w, err := export.CreateTrajectories(path, export.WriterOptions{})
	trajtest.WriteAll(t, w, err, trs...)
	return trs
}

func TestAdvantageCmdOffline(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeAdvInput(t, in)
	for _, out := range []string{"adv.jsonl", "adv.parquet"} {
		outPath := filepath.Join(dir, out)
		stdout, err := runAdvantageCmd(t, "--in", in, "--out", outPath, "--mode", "hybrid", "--estimator", "rloo", "--memory-limit", "1KiB")
		if err != nil {
			t.Fatalf("%s: %v\n%s", out, err, stdout)
		}
		if !strings.Contains(stdout, "6 trajectories in 2 groups -> 6 records") {
			t.Errorf("%s: summary: %s", out, stdout)
		}
		r, err := export.OpenAdvantages(outPath)
		recs := trajtest.ReadAll(t, r, err)
		if len(recs) != 6 {
			t.Fatalf("%s: %d records", out, len(recs))
		}
		for _, r := range recs {
			if r.Mode != "hybrid" || r.Estimator != "rloo" || r.Advantages[2] != 0 {
				t.Errorf("%s: record %s: mode %s estimator %s advantages %v", out, r.TrajectoryID, r.Mode, r.Estimator, r.Advantages)
			}
		}
	}
}

// TestAdvantageCmdParquetInput: the same trajectories read from Parquet and
// from JSONL give the same records.
func TestAdvantageCmdParquetInput(t *testing.T) {
	dir := t.TempDir()
	byFormat := map[string]string{}
	for _, in := range []string{"in.jsonl", "in.parquet"} {
		inPath, outPath := filepath.Join(dir, in), filepath.Join(dir, in+".adv.jsonl")
		writeAdvInput(t, inPath)
		if stdout, err := runAdvantageCmd(t, "--in", inPath, "--out", outPath, "--mode", "hybrid", "--kl", "k1"); err != nil {
			t.Fatalf("%s: %v\n%s", in, err, stdout)
		}
		r, err := export.OpenAdvantages(outPath)
		recs := trajtest.ReadAll(t, r, err)
		slices.SortFunc(recs, func(a, b traj.AdvantageRecord) int { return strings.Compare(a.TrajectoryID, b.TrajectoryID) })
		if len(recs) != 6 {
			t.Fatalf("%s: %d records, want 6", in, len(recs))
		}
		byFormat[in] = fmt.Sprintf("%+v", recs)
	}
	if byFormat["in.jsonl"] != byFormat["in.parquet"] {
		t.Errorf("records from Parquet input differ from JSONL input:\n%s\n%s", byFormat["in.parquet"], byFormat["in.jsonl"])
	}
}

func TestAdvantageCmdUsageErrors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeAdvInput(t, in)
	for _, args := range [][]string{
		{"--in", in},
		{"--in", in, "--out", filepath.Join(dir, "x.csv")},
		{"--in", in, "--out", filepath.Join(dir, "x.jsonl"), "--mode", "sideways"},
		{"--in", in, "--out", filepath.Join(dir, "x.jsonl"), "--kl-coef", "0.1"},
		{"--in", in, "--out", filepath.Join(dir, "x.jsonl"), "--memory-limit", "lots"},
		{"--in", in, "--out", filepath.Join(dir, "x.jsonl"), "--memory-limit", "NaN"},
		{"serve", "--job", "j"},
		{"serve", "--redis", "redis://h", "--job", "a{b}"},
		{"serve", "--redis", "http://h", "--job", "j"},
		{"serve", "--redis", "redis://h", "--job", "j", "--ref-batch", "0"},
		{"--in", in, "--out", filepath.Join(dir, "x.jsonl"), "--ref-model", dir, "--ref-temperature", "0"},
		{"serve", "--redis", "redis://h", "--job", "j", "--ref-model", dir, "--ref-temperature", "-1"},
	} {
		_, err := runAdvantageCmd(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// TestAdvantageCmdRefModel scores trajectories without ref_logprobs with a
// tiny random Llama through --ref-model, at the default temperature and at
// --ref-temperature 0.7, and checks the references against the actor's
// scorer called directly.
func TestAdvantageCmdRefModel(t *testing.T) {
	dir := t.TempDir()
	model := tinymodel.Write(t, 3, nil)
	in := filepath.Join(dir, "in.jsonl")
	trs := writeAdvInput(t, in)
	pol, err := actor.Load(context.Background(), actor.LoadOptions{Dir: model, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	for _, temperature := range []float64{1, 0.7} {
		out := filepath.Join(dir, fmt.Sprintf("adv-%v.jsonl", temperature))
		stdout, err := runAdvantageCmd(t, "--in", in, "--out", out, "--ref-model", model, "--ref-batch", "4",
			"--ref-temperature", fmt.Sprint(temperature), "--kl", "k3", "--kl-coef", "0.01")
		if err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if !strings.Contains(stdout, "ref-scored 6") {
			t.Errorf("summary: %s", stdout)
		}
		want, err := pol.ScoreTemperature(context.Background(), [][]int32{trs[0].Tokens}, []int{trs[0].PromptLen}, temperature)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := export.OpenAdvantages(out)
		for _, r := range trajtest.ReadAll(t, rd, err) {
			if len(r.RefLogprobs) != 5 || len(r.KL) != 5 || r.KLEstimator != "k3" {
				t.Fatalf("record %s: ref %v kl %v", r.TrajectoryID, r.RefLogprobs, r.KL)
			}
			if r.RefLogprobs[2] != 0 || r.KL[2] != 0 {
				t.Errorf("record %s: injected token has ref %g kl %g", r.TrajectoryID, r.RefLogprobs[2], r.KL[2])
			}
			if r.TrajectoryID == trs[0].ID {
				for _, j := range []int{0, 1, 4} {
					if math.Abs(float64(r.RefLogprobs[j]-want[0][j])) > 1e-6 {
						t.Errorf("T=%v: ref_logprobs[%d] = %g, the scorer gives %g", temperature, j, r.RefLogprobs[j], want[0][j])
					}
				}
			}
		}
	}
}

// TestAdvantageCmdRefModelUsesRecordedTemperature: trajectories that
// record their sampling temperature are scored at it (1 when greedy),
// whatever --ref-temperature says; it only covers trajectories that record
// none. (Before, every trajectory was scored at --ref-temperature, default
// 1: a run sampled at 0.7 got references, and KL terms, at 1.)
func TestAdvantageCmdRefModelUsesRecordedTemperature(t *testing.T) {
	dir := t.TempDir()
	model := tinymodel.Write(t, 3, nil)
	in := filepath.Join(dir, "in.jsonl")
	var trs []traj.Trajectory
	gs := advGroups()
	recorded := map[string]*float64{gs[0].GroupID: trajtest.Temperature(0.7), gs[1].GroupID: trajtest.Temperature(0)}
	for _, g := range gs {
		for _, tr := range g.Trajectories {
			tr.Temperature = recorded[g.GroupID]
			trs = append(trs, tr)
		}
	}
	w, err := export.CreateTrajectories(in, export.WriterOptions{})
	trajtest.WriteAll(t, w, err, trs...)
	pol, err := actor.Load(context.Background(), actor.LoadOptions{Dir: model, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	out := filepath.Join(dir, "adv.jsonl")
	if stdout, err := runAdvantageCmd(t, "--in", in, "--out", out, "--ref-model", model, "--ref-temperature", "1.5", "--kl", "k3"); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	byID := map[string]traj.Trajectory{}
	for _, tr := range trs {
		byID[tr.ID] = tr
	}
	rd, err := export.OpenAdvantages(out)
	recs := trajtest.ReadAll(t, rd, err)
	if len(recs) != len(trs) {
		t.Fatalf("%d records for %d trajectories", len(recs), len(trs))
	}
	for _, r := range recs {
		tr := byID[r.TrajectoryID]
		T := 1.0 // greedy
		if *tr.Temperature != 0 {
			T = *tr.Temperature
		}
		want, err := pol.ScoreTemperature(context.Background(), [][]int32{tr.Tokens}, []int{tr.PromptLen}, T)
		if err != nil {
			t.Fatal(err)
		}
		for j, m := range tr.LossMask {
			if m == 1 && math.Abs(float64(r.RefLogprobs[j]-want[0][j])) > 1e-6 {
				t.Errorf("record %s (sampled at %v): ref_log_prob[%d] = %g, the scorer at T=%v gives %g",
					r.TrajectoryID, *tr.Temperature, j, r.RefLogprobs[j], T, want[0][j])
			}
		}
	}
}

// TestAdvantageCmdServeRefModel runs "advantage serve --ref-model" end to end
// against a real redis-server: two groups without ref_logprobs come out with
// references from the model and KL, each exactly once, and a cancellation
// (what SIGINT does) stops the service with status 130.
func TestAdvantageCmdServeRefModel(t *testing.T) {
	const job = "j"
	model := tinymodel.Write(t, 3, nil)
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client, err := stream.Connect(context.Background(), r.URL(), stream.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	groups := advGroups()
	p := stream.NewProducer(client, stream.ProducerOptions{})
	if _, err := p.AddGroups(context.Background(), job, groups); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := newAdvantageCmd()
	cmd.SetArgs([]string{"serve", "--redis", r.URL(), "--job", job, "--listen", "", "--ref-model", model, "--ref-batch", "4",
		"--kl", "k3", "--kl-coef", "0.01", "--workers", "1"})
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	keys := stream.JobKeys(job)
	deadline := time.Now().Add(60 * time.Second)
	for n, _ := client.SCard(ctx, keys.GroupsDone).Result(); n < 2; n, _ = client.SCard(ctx, keys.GroupsDone).Result() {
		select {
		case err := <-done:
			t.Fatalf("serve exited early: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("timed out with %d groups done\n%s", n, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	err = <-done
	var ee exitError
	if !errors.As(err, &ee) || ee.code != exitInterrupted {
		t.Fatalf("serve after cancellation: %v, want exit status %d\n%s", err, exitInterrupted, out.String())
	}

	pol, err := actor.Load(context.Background(), actor.LoadOptions{Dir: model, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	msgs, err := client.XRange(context.Background(), keys.Advantages, "-", "+").Result()
	if err != nil || len(msgs) != 6 {
		t.Fatalf("%d advantage entries (%v), want 6\n%s", len(msgs), err, out.String())
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		data, _ := m.Values[stream.FieldRecord].(string)
		rec, err := wire.DecodeRecord([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if seen[rec.TrajectoryID] {
			t.Fatalf("record %s written twice", rec.TrajectoryID)
		}
		seen[rec.TrajectoryID] = true
		if len(rec.RefLogprobs) != 5 || len(rec.KL) != 5 || rec.KLEstimator != "k3" || rec.RefLogprobs[2] != 0 {
			t.Fatalf("record %s: ref %v kl %v", rec.TrajectoryID, rec.RefLogprobs, rec.KL)
		}
		var tr traj.Trajectory
		for _, x := range append(groups[0].Trajectories, groups[1].Trajectories...) {
			if x.ID == rec.TrajectoryID {
				tr = x
			}
		}
		want, err := pol.Score(context.Background(), [][]int32{tr.Tokens}, []int{tr.PromptLen})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range []int{0, 1, 4} {
			if math.Abs(float64(rec.RefLogprobs[j]-want[0][j])) > 1e-5 {
				t.Errorf("record %s: ref_logprobs[%d] = %g, the scorer gives %g", rec.TrajectoryID, j, rec.RefLogprobs[j], want[0][j])
			}
		}
	}
}
