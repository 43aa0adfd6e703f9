package actor

import (
	"context"
	"testing"

	"github.com/toolrl/toolrl/traj"
)

// TestGreedyMatchesReference decodes greedily through the engine (prefill,
// KV cache, batching with other prompts of different lengths) and checks the
// tokens against the pure-Go reference decoder, which shares no code with
// ONNX Runtime.
func TestGreedyMatchesReference(t *testing.T) {
	pol, ref := loadTiny(t, 1)
	eng := NewEngine(pol, EngineOptions{MaxBatch: 8})
	defer eng.Close()
	const maxNew = 12
	var seqs []*Sequence
	prompts := [][]int32{prompt(5, 1), prompt(1, 2), prompt(9, 3)}
	for i, p := range prompts {
		ss, err := eng.AddGroup(GroupRequest{ID: "g" + string(rune('0'+i)), Prompt: p, Seeds: []uint64{1, 2},
			Sampling: Sampling{MaxSampledTokens: maxNew, EOS: []int32{}}})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ss...)
	}
	runAll(t, eng, nil)
	for i, s := range seqs {
		p := prompts[i/2]
		p64 := make([]int64, len(p))
		for j, id := range p {
			p64[j] = int64(id)
		}
		want, err := ref.Greedy(p64, maxNew)
		if err != nil {
			t.Fatal(err)
		}
		got := s.Tokens()[s.PromptLen():]
		if len(got) != len(want) {
			t.Fatalf("seq %d: %d tokens, reference %d", i, len(got), len(want))
		}
		for j := range got {
			if int64(got[j]) != want[j] {
				t.Fatalf("seq %d token %d: got %d, reference %d (got %v want %v)", i, j, got[j], want[j], got, want)
			}
		}
		if s.FinishReason() != traj.FinishLength {
			t.Errorf("seq %d: finish %q, want length", i, s.FinishReason())
		}
	}
	st := eng.Stats()
	// Prefix sharing: each prompt prefilled once (all but its last token),
	// although every group has two samples.
	if want := int64(4 + 0 + 8); st.PrefillTokens != want {
		t.Errorf("prefill tokens %d, want %d (one prefill per group)", st.PrefillTokens, want)
	}
	if st.DecodeRuns != maxNew {
		t.Errorf("decode runs %d, want %d (one per step for the whole batch)", st.DecodeRuns, maxNew)
	}
	_ = context.Background()
}
