package bench

import (
	"context"
	"slices"
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
