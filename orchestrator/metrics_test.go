package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/traj"
)

// gatherSeries returns the registry's samples as "name{label=value,...}"
// → value (a histogram as its count).
func gatherSeries(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// TestCollectorReadsTheLiveSummary: nothing before the run publishes; then
// the series are the published summary's (tool calls by registry tool, an
// unknown name under "unknown"), a later change shows only once published,
// and the worker series appear only for a worker.
func TestCollectorReadsTheLiveSummary(t *testing.T) {
	live := NewLive()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(live)); err != nil {
		t.Fatal(err)
	}
	if got := gatherSeries(t, reg); len(got) != 0 {
		t.Fatalf("series before the run published: %v", got)
	}
	s := newSummary("j")
	s.setTools([]string{"calculator"})
	s.PromptsTotal, s.GroupsWritten, s.Trajectories, s.Correct, s.RewardSum = 5, 2, 4, 3, 2
	s.Finish[traj.FinishStop] = 4
	for _, c := range []struct{ name, outcome string }{{"calculator", "ok"}, {"calculator", "ok"}, {"calculator", "timeout"}, {"made_up", "unknown_tool"}, {"", "bad_json"}} {
		s.Calls[c.outcome]++
		s.countToolCall(c.name, c.outcome)
	}
	live.set(s.clone(), nil, nil)
	s.GroupsWritten = 99 // not published
	want := map[string]float64{
		"toolrl_rollout_prompts_read_total":                                  5,
		"toolrl_rollout_groups_written_total":                                2,
		"toolrl_rollout_trajectories_total":                                  4,
		"toolrl_rollout_trajectories_correct_total":                          3,
		"toolrl_rollout_accuracy_ratio":                                      0.75,
		"toolrl_rollout_reward_mean":                                         0.5,
		"toolrl_rollout_finish_total{reason=stop}":                           4,
		"toolrl_rollout_tool_calls_total{outcome=ok,tool=calculator}":        2,
		"toolrl_rollout_tool_calls_total{outcome=timeout,tool=calculator}":   1,
		"toolrl_rollout_tool_calls_total{outcome=unknown_tool,tool=unknown}": 1,
		"toolrl_rollout_tool_calls_total{outcome=bad_json,tool=unknown}":     1,
	}
	got := gatherSeries(t, reg)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %g, want %g", k, got[k], v)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "toolrl_rollout_worker_") {
			t.Errorf("worker series %s in a run without a worker", k)
		}
	}

	s.Worker = &prompt.FeedStats{Claimed: 7, Refused: 1, OverDelivered: 2}
	live.set(s.clone(), nil, nil)
	got = gatherSeries(t, reg)
	for k, v := range map[string]float64{
		"toolrl_rollout_groups_written_total":                              99,
		"toolrl_rollout_worker_claimed_total":                              7,
		"toolrl_rollout_worker_dead_lettered_total{reason=refused}":        1,
		"toolrl_rollout_worker_dead_lettered_total{reason=over_delivered}": 2,
		"toolrl_rollout_worker_dead_lettered_total{reason=corrupt}":        0,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %g (present %v), want %g", k, g, ok, v)
		}
	}

	// The JSON summary has the same tool calls.
	j := s.JSON("redis://:secret@host:6379/0", nil)
	if strings.Contains(j.Output, "secret") || !strings.Contains(j.Output, "host:6379") {
		t.Errorf("output %q holds the password", j.Output)
	}
	if fmt.Sprint(j.ToolCalls.ByTool) != "map[calculator:map[ok:2 timeout:1] unknown:map[bad_json:1 unknown_tool:1]]" || j.ToolCalls.Total != 5 {
		t.Errorf("JSON tool calls %v (total %d)", j.ToolCalls.ByTool, j.ToolCalls.Total)
	}
}

// TestLiveDuringARun scrapes a run of the default policy while it runs
// (under -race this checks that a scrape never reads the runner's own
// summary) and, once Run has returned, finds the returned summary's figures.
func TestLiveDuringARun(t *testing.T) {
	job := calcJob(t, filepath.Join(t.TempDir(), "calc.jsonl"))
	live := NewLive()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(live))
	done := make(chan struct{})
	scraped := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				scraped <- n
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
			}
			n++
			time.Sleep(time.Millisecond)
		}
	}()
	var eng *actor.Engine
	sum, err := quietRun(t, context.Background(), job, RunOptions{Live: live, Hooks: Hooks{Engine: func(e *actor.Engine) { eng = e }}})
	close(done)
	if n := <-scraped; n == 0 {
		t.Error("no scrape while the run ran")
	}
	if err != nil {
		t.Fatal(err)
	}
	got := gatherSeries(t, reg)
	if got["toolrl_rollout_groups_written_total"] != float64(sum.GroupsWritten) || sum.GroupsWritten != 12 {
		t.Errorf("groups written: /metrics %g, summary %d, want 12", got["toolrl_rollout_groups_written_total"], sum.GroupsWritten)
	}
	calls := 0
	for tool, byOutcome := range sum.ToolCalls {
		for outcome, n := range byOutcome {
			calls += n
			if k := "toolrl_rollout_tool_calls_total{outcome=" + outcome + ",tool=" + tool + "}"; got[k] != float64(n) {
				t.Errorf("%s = %g, summary %d", k, got[k], n)
			}
		}
	}
	byOutcome := 0
	for _, n := range sum.Calls {
		byOutcome += n
	}
	if calls == 0 || calls != byOutcome {
		t.Errorf("tool calls by tool add up to %d, by outcome %v", calls, sum.Calls)
	}
	if got[`toolrl_rollout_tool_call_seconds{tool=calculator}`] < float64(sum.ToolCalls["calculator"]["ok"]) {
		t.Errorf("calculator executions %g < %d ok calls", got[`toolrl_rollout_tool_call_seconds{tool=calculator}`], sum.ToolCalls["calculator"]["ok"])
	}
	// Every engine step that ran the model is in the decode step histogram;
	// the batch is empty once the run is over.
	if n := eng.Stats().Steps; n == 0 || got["toolrl_rollout_decode_step_seconds"] != float64(n) {
		t.Errorf("decode_step_seconds count %g, engine steps %d", got["toolrl_rollout_decode_step_seconds"], n)
	}
	if got["toolrl_rollout_sequences_running"] != 0 || got["toolrl_rollout_sequences_queued"] != 0 {
		t.Errorf("sequences running %g, queued %g after the run", got["toolrl_rollout_sequences_running"], got["toolrl_rollout_sequences_queued"])
	}
}
