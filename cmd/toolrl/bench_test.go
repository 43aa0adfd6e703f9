package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/tinymodel"
	"github.com/toolrl/toolrl/traj"
)

// TestBenchToolWorkloadThroughRunner checks that the tool-use workload, run
// through the orchestrator's runner, is the benchmark's: every sample
// samples exactly --new-tokens tokens, pauses at benchPausePoints (the
// schedule the transformers.js peer reproduces) and gets the 6 injected
// tokens prefilled at each, and the prompt is prefilled once per group.
func TestBenchToolWorkloadThroughRunner(t *testing.T) {
	model := tinymodel.Write(t, 1, nil)
	const G, promptLen, newTokens, every, inject = 8, 5, 23, 4, 6
	var groups []traj.Group
	res, err := measureRunner(context.Background(), runnerWorkload{model: model, threads: 1,
		throughputOptions: throughputOptions{concurrency: 2 * G, groupSize: G, promptLen: promptLen, newTokens: newTokens,
			pauseEvery: every, injectTokens: inject},
		onGroup: func(g *traj.Group) { groups = append(groups, *g) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var pauses int64
	for i := 0; i < G; i++ {
		pauses += int64(len(benchPausePoints(every, i, newTokens)))
	}
	pauses *= 2 // two groups
	if res.generated != 2*G*newTokens || res.pauses != pauses {
		t.Errorf("generated %d tokens with %d resumed pauses; want %d and %d", res.generated, res.pauses, 2*G*newTokens, pauses)
	}
	// The engine prefills a prompt but its last token (the first decode
	// step feeds it) and, at each resume, the call's last sampled token and
	// the injected tokens but the last.
	if want := int64(2*(promptLen-1)) + pauses*inject; res.stats.PrefillTokens != want {
		t.Errorf("prefilled %d tokens, want %d (two prompts of %d, %d tool results of %d)", res.stats.PrefillTokens, want, promptLen, pauses, inject)
	}
	if len(groups) != 2 {
		t.Fatalf("%d measured groups, want 2 (the warm-up group is not measured)", len(groups))
	}
	for _, tr := range groups[0].Trajectories {
		var at []int
		sampled := 0
		for _, s := range tr.Segments {
			switch s.Kind {
			case traj.SegmentModel:
				sampled += s.End - s.Start
			case traj.SegmentTool:
				if s.Text != benchText(inject) {
					t.Errorf("%s: injected %q, want %q", tr.ID, s.Text, benchText(inject))
				}
				if sampled < newTokens {
					at = append(at, sampled)
				}
			}
		}
		want := benchPausePoints(every, tr.SampleIndex, newTokens)
		if sampled != newTokens || !slices.Equal(at, want) {
			t.Errorf("%s: %d sampled, paused at %v; want %d, %v", tr.ID, sampled, at, newTokens, want)
		}
		if got := tr.Tokens[:tr.PromptLen]; !slices.Equal(got, benchIDs(promptLen)) {
			t.Errorf("%s: prompt %v, want %v", tr.ID, got, benchIDs(promptLen))
		}
	}
}

func TestBenchPausePoints(t *testing.T) {
	for _, c := range []struct {
		every, sample, newTokens int
		want                     []int
	}{
		{8, 0, 64, []int{8, 16, 24, 32, 40, 48, 56}},
		{8, 1, 64, []int{9, 18, 27, 36, 45, 54, 63}},
		{8, 5, 20, []int{9, 18}},
		{8, 3, 22, []int{11}},
		{8, 0, 8, nil}, // a call on the last token ends the trajectory
		{0, 0, 64, nil},
	} {
		if got := benchPausePoints(c.every, c.sample, c.newTokens); !slices.Equal(got, c.want) {
			t.Errorf("benchPausePoints(%d, %d, %d) = %v, want %v", c.every, c.sample, c.newTokens, got, c.want)
		}
	}
}

// TestBenchActorRefusesBadFlags: each count flag refuses a negative (and 0
// where 0 means nothing) with its name, before any model is loaded.
func TestBenchActorRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--prompt-len", "0"}, "--prompt-len 0: want ≥ 1"},
		{[]string{"--prompt-len", "-3"}, "--prompt-len -3: want ≥ 1"},
		{[]string{"--new-tokens", "0"}, "--new-tokens 0: want ≥ 1"},
		{[]string{"--new-tokens", "-1"}, "--new-tokens -1: want ≥ 1"},
		{[]string{"--peer-g", "0"}, "--peer-g 0: want ≥ 1"},
		{[]string{"--peer-g", "-8"}, "--peer-g -8: want ≥ 1"},
		{[]string{"--peer-repeats", "0"}, "--peer-repeats 0: want ≥ 1"},
		{[]string{"--threads", "-1"}, "--threads -1: want ≥ 0 (0: ONNX Runtime's default)"},
		{[]string{"--tools-every", "-2"}, "--tools-every -2: want ≥ 0"},
		{[]string{"--rss", "-5"}, "--rss -5: want ≥ 0"},
		{[]string{"--rss", "12"}, "--rss 12: want a multiple of 8"},
	} {
		args := append([]string{"bench", "actor", "--model", "/nonexistent/model"}, c.args...)
		_, _, err := runToolrl(t, args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}

// TestQuantizedBaselines checks that a quantized row is compared with the
// float model's row at the same concurrency and workload only, and that a
// row without such a row keeps no ratio.
func TestQuantizedBaselines(t *testing.T) {
	rows := []benchRow{
		{Model: "fp", Concurrency: 8, TokensPerSec: 100},
		{Model: "fp", Concurrency: 64, TokensPerSec: 300},
		{Model: "fp", Concurrency: 64, ToolCalls: true, TokensPerSec: 200},
		{Model: "q", Concurrency: 8, TokensPerSec: 250, Baseline: "fp"},
		{Model: "q", Concurrency: 64, ToolCalls: true, TokensPerSec: 300, Baseline: "fp"},
		{Model: "q", Concurrency: 16, TokensPerSec: 300, Baseline: "fp"},
	}
	peers := []peerRow{
		{Model: "fp", G: 8, ToolrlTPS: 100, PeerTPS: 50},
		{Model: "q", G: 8, ToolrlTPS: 220, PeerTPS: 60, Baseline: "fp"},
	}
	quantizedBaselines(rows, peers)
	for i, want := range []float64{0, 0, 0, 2.5, 1.5, 0} {
		if rows[i].VsBaseline != want {
			t.Errorf("row %d (%s c%d tools %v): ratio %v, want %v", i, rows[i].Model, rows[i].Concurrency, rows[i].ToolCalls, rows[i].VsBaseline, want)
		}
	}
	if p := peers[1]; p.ToolrlVsFloat != 2.2 || p.PeerVsFloat != 1.2 {
		t.Errorf("peer row: toolrl %v, transformers.js %v vs the float model; want 2.2 and 1.2", p.ToolrlVsFloat, p.PeerVsFloat)
	}
	if peers[0].ToolrlVsFloat != 0 {
		t.Errorf("the float model's peer row got a ratio %v", peers[0].ToolrlVsFloat)
	}
}

// TestBenchActorORTConfig: --ort-config entries reach ONNX Runtime's
// session (a value it refuses fails the load, naming the entry), and a
// malformed entry is a flag error naming the flag.
func TestBenchActorORTConfig(t *testing.T) {
	model := tinymodel.Write(t, 1, nil)
	if _, _, err := runToolrl(t, "bench", "actor", "--model", model, "--concurrency", "1", "--new-tokens", "2",
		"--spin", "--ort-config", "session.force_spinning_stop=1"); err != nil {
		t.Fatalf("a valid entry: %v", err)
	}
	_, _, err := runToolrl(t, "bench", "actor", "--model", model, "--concurrency", "1", "--new-tokens", "2",
		"--ort-config", "session.graph_optimization_level=fastest")
	if err == nil || !strings.Contains(err.Error(), "session.graph_optimization_level=fastest") {
		t.Errorf("a value ONNX Runtime refuses: err = %v, want one naming the entry", err)
	}
	if _, _, err := runToolrl(t, "bench", "actor", "--model", model, "--ort-config", "no-equals-sign"); err == nil || !strings.Contains(err.Error(), "ort-config") {
		t.Errorf("a malformed entry: err = %v, want one naming --ort-config", err)
	}
}
