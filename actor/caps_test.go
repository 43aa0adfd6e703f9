package actor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/traj"
)

// runCounting steps eng until idle, injecting inject after every tool call,
// and returns how many EventFinished each sequence got.
func runCounting(t *testing.T, eng *Engine, inject []int32) map[*Sequence]int {
	t.Helper()
	finished := map[*Sequence]int{}
	for steps := 0; !eng.Idle(); steps++ {
		if steps > 10000 {
			t.Fatal("engine did not finish")
		}
		events, err := eng.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			switch ev.Kind {
			case EventToolCall:
				if err := ev.Seq.Inject(inject); err != nil {
					t.Fatal(err)
				}
			case EventFinished:
				if ev.Seq.State() != StateFinished {
					t.Fatalf("finish event for a sequence in state %s", ev.Seq.State())
				}
				finished[ev.Seq]++
			}
		}
	}
	return finished
}

// TestLengthCapsAndFinishEvents checks the three length caps, and that
// every sequence's finish is reported exactly once by a Step, also when the
// cap is reached by a tool call on the last allowed token (the sequence
// finishes in Inject, and the next Step reports it).
func TestLengthCapsAndFinishEvents(t *testing.T) {
	pol, _ := loadTiny(t, 11)
	cases := []struct {
		name     string
		sampling Sampling
		every    int
		inject   []int32
		sampled  int // tokens sampled by each sequence
		response int // response length (sampled + injected)
	}{
		// A call completes on the 6th and last allowed token: executed and
		// injected, then the sequence finishes.
		{"call on the last token", Sampling{MaxSampledTokens: 6}, 3, []int32{'x', 'y'}, 6, 6 + 2*2},
		// The per-turn cap restarts after each injection.
		{"per-turn cap not reached", Sampling{MaxNewTokens: 4, MaxSampledTokens: 12}, 3, []int32{'x'}, 12, 12 + 4},
		{"per-turn cap", Sampling{MaxNewTokens: 2}, 3, []int32{'x'}, 2, 2},
		// Injected tokens count toward the response cap.
		{"response cap while sampling", Sampling{MaxResponseTokens: 9}, 3, []int32{'x'}, 7, 9},
		{"response cap reached by an injection", Sampling{MaxResponseTokens: 10}, 2, []int32{'x', 'y', 'z'}, 4, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eng := NewEngine(pol, EngineOptions{})
			defer eng.Close()
			s := c.sampling
			s.Temperature, s.EOS = 1, []int32{}
			seqs, err := eng.AddGroup(GroupRequest{ID: "g", Prompt: prompt(5, 2), Seeds: []uint64{1, 2, 3}, Sampling: s,
				NewDetector: func() CallDetector { return &everyN{n: c.every} }})
			if err != nil {
				t.Fatal(err)
			}
			finished := runCounting(t, eng, c.inject)
			for i, seq := range seqs {
				if finished[seq] != 1 {
					t.Errorf("sample %d: %d finish events, want 1", i, finished[seq])
				}
				if seq.FinishReason() != traj.FinishLength || seq.SampledTokens() != c.sampled ||
					seq.Len()-seq.PromptLen() != c.response {
					t.Errorf("sample %d: finish %q, %d sampled, response %d; want length, %d, %d",
						i, seq.FinishReason(), seq.SampledTokens(), seq.Len()-seq.PromptLen(), c.sampled, c.response)
				}
			}
		})
	}
}

// TestStopStringsStartAfterInjection: a stop string is matched against the
// text generated since the last injection, never across it. The stop
// string here is the end of turn 0's text joined to the start of turn 1's:
// it never appears in the generated text itself, which has the tool result
// between them.
func TestStopStringsStartAfterInjection(t *testing.T) {
	pol, _ := loadTiny(t, 12)
	run := func(stops []string) *Sequence {
		eng := NewEngine(pol, EngineOptions{})
		defer eng.Close()
		seqs, err := eng.AddGroup(GroupRequest{ID: "g", Prompt: prompt(5, 3), Seeds: []uint64{1},
			Sampling:    Sampling{Temperature: 0, EOS: []int32{}, MaxSampledTokens: 12, StopStrings: stops},
			NewDetector: func() CallDetector { return &everyN{n: 6} }})
		if err != nil {
			t.Fatal(err)
		}
		runCounting(t, eng, []int32{'\n'})
		return seqs[0]
	}
	plain := run(nil)
	var turns []string
	for _, seg := range plain.Segments() {
		if seg.Kind == traj.SegmentModel {
			turns = append(turns, seg.Text)
		}
	}
	if len(turns) != 2 || turns[0] == "" || turns[1] == "" {
		t.Fatalf("want two non-empty model turns, got %q", turns)
	}
	r0, r1 := []rune(turns[0]), []rune(turns[1])
	stop := string(r0[len(r0)-1]) + string(r1[0])
	if strings.Contains(turns[0], stop) || strings.Contains(turns[1], stop) {
		t.Skipf("stop %q occurs inside a turn (%q): the greedy text does not separate the cases", stop, turns)
	}
	got := run([]string{stop})
	if got.FinishReason() != plain.FinishReason() || got.Len() != plain.Len() {
		t.Errorf("stop %q matched across the injection: finish %q at length %d, want %q at %d",
			stop, got.FinishReason(), got.Len(), plain.FinishReason(), plain.Len())
	}
}

// TestChunkedPrefill: a prefill over the logits budget runs in chunks of
// columns, and gives the same trajectories as one Run per prefill: same
// tokens, logprobs within 1e-4. With a budget of one column every prefill
// splits, resumed rows' injections (1 to 3 tokens, a lone resumed row's past
// read in place from the batch) included; with three, the prompts split.
func TestChunkedPrefill(t *testing.T) {
	pol, _ := loadTiny(t, 2)
	s := testSampling()
	want, whole := generateStats(t, pol, 16, 4, s)
	t.Cleanup(func() { pol.prefillBudget = 0 })
	for _, columns := range []int{1, 3} {
		pol.prefillBudget = 4 * pol.io.vocab * columns
		got, chunked := generateStats(t, pol, 16, 4, s)
		if chunked.PrefillRuns <= whole.PrefillRuns || chunked.PrefillTokens != whole.PrefillTokens {
			t.Fatalf("%d columns: prefill runs %d (tokens %d) chunked vs %d (tokens %d) whole: no chunking happened",
				columns, chunked.PrefillRuns, chunked.PrefillTokens, whole.PrefillRuns, whole.PrefillTokens)
		}
		if columns == 1 && chunked.PrefillRuns != int(chunked.PrefillTokens) {
			t.Fatalf("one column per Run: %d runs for %d tokens", chunked.PrefillRuns, chunked.PrefillTokens)
		}
		for i := range want {
			if fmt.Sprint(got[i].tokens) != fmt.Sprint(want[i].tokens) {
				t.Fatalf("%d columns: trajectory %d differs:\n got %v\nwant %v", columns, i, got[i].tokens, want[i].tokens)
			}
			for j := range got[i].logprobs {
				if d := math.Abs(float64(got[i].logprobs[j] - want[i].logprobs[j])); d > 1e-4 {
					t.Fatalf("%d columns: trajectory %d logprob %d differs by %g", columns, i, j, d)
				}
			}
		}
	}
}

// TestScoreLongSequenceInChunks: a sequence longer than the scoring budget
// allows in one Run is scored in chunks of columns (here 5 tokens) and gets
// the same logprobs, at T = 1 and T = 0.7.
func TestScoreLongSequenceInChunks(t *testing.T) {
	pol, _ := loadTiny(t, 6)
	seqs := [][]int32{prompt(23, 1), prompt(31, 2)}
	plens := []int{1, 7}
	for _, temperature := range []float64{1, 0.7} {
		whole, err := pol.ScoreTemperature(context.Background(), seqs, plens, temperature)
		if err != nil {
			t.Fatal(err)
		}
		pol.scoreBudget = 4 * pol.io.vocab * 5
		chunked, err := pol.ScoreTemperature(context.Background(), seqs, plens, temperature)
		pol.scoreBudget = 0
		if err != nil {
			t.Fatal(err)
		}
		for i := range seqs {
			if len(chunked[i]) != len(whole[i]) {
				t.Fatalf("T=%v seq %d: %d logprobs chunked, %d whole", temperature, i, len(chunked[i]), len(whole[i]))
			}
			for j := range whole[i] {
				if d := math.Abs(float64(chunked[i][j] - whole[i][j])); d > 1e-4 || chunked[i][j] == 0 {
					t.Fatalf("T=%v seq %d token %d: chunked %v whole %v", temperature, i, j, chunked[i][j], whole[i][j])
				}
			}
		}
	}
}

// TestEOSAcrossBatchSizes: with EOS ids that the sampler does draw, the
// sequences that draw one finish with FinishStop, keep the EOS token with
// mask 1 and its teacher-forced logprob, and the trajectories are the same
// at batch 16 and batch 1.
func TestEOSAcrossBatchSizes(t *testing.T) {
	pol, _ := loadTiny(t, 2)
	s := testSampling()
	free := generate(t, pol, 16, 4, s)
	// EOS ids: tokens sampled early by two of the trajectories.
	eos := map[int32]bool{}
	for _, i := range []int{0, 5} {
		resp := free[i].tokens[free[i].prompt:]
		for j := range resp {
			if j >= 3 && free[i].mask[j] == 1 {
				eos[resp[j]] = true
				break
			}
		}
	}
	for id := range eos {
		s.EOS = append(s.EOS, id)
	}
	want := generate(t, pol, 16, 4, s)
	got := generate(t, pol, 1, 1, s)
	stopped := 0
	var seqs [][]int32
	var plens []int
	for i := range want {
		if fmt.Sprint(got[i].tokens) != fmt.Sprint(want[i].tokens) || got[i].finish != want[i].finish {
			t.Fatalf("trajectory %d differs between batch 16 and batch 1", i)
		}
		tr := want[i]
		last := len(tr.tokens) - 1
		if tr.finish == traj.FinishStop {
			if !eos[tr.tokens[last]] || tr.mask[len(tr.mask)-1] != 1 {
				t.Fatalf("trajectory %d stopped on token %d (mask %d), not an EOS id", i, tr.tokens[last], tr.mask[len(tr.mask)-1])
			}
			stopped++
		}
		for j, id := range tr.tokens[tr.prompt:last] {
			if eos[id] && tr.mask[j] == 1 {
				t.Fatalf("trajectory %d sampled EOS id %d at %d and went on", i, id, j)
			}
		}
		seqs, plens = append(seqs, tr.tokens), append(plens, tr.prompt)
	}
	if stopped < 2 {
		t.Fatalf("only %d trajectories stopped on an EOS id", stopped)
	}
	scored, err := pol.ScoreTemperature(context.Background(), seqs, plens, s.Temperature)
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range want {
		j := len(tr.logprobs) - 1
		if tr.finish != traj.FinishStop {
			continue
		}
		if d := math.Abs(float64(tr.logprobs[j] - scored[i][j])); d > 1e-4 || tr.logprobs[j] == 0 {
			t.Fatalf("trajectory %d: last token's logprob %v, teacher-forced %v", i, tr.logprobs[j], scored[i][j])
		}
	}
}

// TestInjectBeyondContext: an injection that would take a sequence past the
// model's context is refused with ErrNoRoom, the sequence stays paused with
// nothing appended, and the caller can finish it.
func TestInjectBeyondContext(t *testing.T) {
	pol, _ := loadTiny(t, 13)
	eng := NewEngine(pol, EngineOptions{MaxSeqLen: 12})
	defer eng.Close()
	seqs, err := eng.AddGroup(GroupRequest{ID: "g", Prompt: prompt(5, 1), Seeds: []uint64{1},
		Sampling:    Sampling{Temperature: 1, EOS: []int32{}},
		NewDetector: func() CallDetector { return &everyN{n: 3} }})
	if err != nil {
		t.Fatal(err)
	}
	s := seqs[0]
	for s.State() != StatePaused {
		if _, err := eng.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	n := s.Len() // 8: 5 prompt + 3 sampled
	err = s.Inject([]int32{'a', 'b', 'c', 'd', 'e'})
	if !errors.Is(err, ErrNoRoom) || s.State() != StatePaused || s.Len() != n {
		t.Fatalf("inject past the context: %v, state %s, length %d (was %d)", err, s.State(), s.Len(), n)
	}
	// Exactly filling the context is allowed, and finishes the sequence.
	if err := s.Inject([]int32{'a', 'b', 'c', 'd'}); err != nil {
		t.Fatal(err)
	}
	finished := runCounting(t, eng, nil)
	if finished[s] != 1 || s.FinishReason() != traj.FinishLength || s.Len() != 12 {
		t.Fatalf("%d finish events, %q at length %d; want 1, length at 12", finished[s], s.FinishReason(), s.Len())
	}
}
