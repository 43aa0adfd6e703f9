package actor

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/traj"
)

// everyN is a test detector that reports a completed call every n deltas.
type everyN struct{ n, seen int }

func (d *everyN) Feed(string) bool {
	d.seen++
	return d.seen%d.n == 0
}

// toolResult is the deterministic injection for a paused sequence: its
// length and content depend on the sequence and how far it has got.
func toolResult(s *Sequence) []int32 {
	n := int((s.Seed() + uint64(len(s.tokens))) % 4) // 0 to 3 tokens: an empty injection resumes directly
	out := make([]int32, n)
	for i := range out {
		out[i] = int32('0' + (len(s.tokens)+i)%10)
	}
	return out
}

type trajectory struct {
	tokens   []int32
	mask     []uint8
	logprobs []float32
	finish   traj.FinishReason
	segs     []traj.Segment
	prompt   int
	text     string
}

// generate runs the same 16 trajectories (4 prompts x 4 samples, with tool
// pauses) with at most maxBatch sequences per step and groups of g samples.
func generate(t *testing.T, pol *Policy, maxBatch, g int, sampling Sampling) []trajectory {
	trs, _ := generateStats(t, pol, maxBatch, g, sampling)
	return trs
}

func generateStats(t *testing.T, pol *Policy, maxBatch, g int, sampling Sampling) ([]trajectory, Stats) {
	t.Helper()
	eng := NewEngine(pol, EngineOptions{MaxBatch: maxBatch})
	defer eng.Close()
	var seqs []*Sequence
	for p := 0; p < 4; p++ {
		pr := prompt(3+5*p, p)
		for lo := 0; lo < 4; lo += g {
			var seeds []uint64
			for i := lo; i < lo+g; i++ {
				seeds = append(seeds, SampleSeed(42, fmt.Sprint("p", p), i))
			}
			ss, err := eng.AddGroup(GroupRequest{ID: fmt.Sprint("p", p), Prompt: pr, Seeds: seeds, Sampling: sampling,
				NewDetector: func() CallDetector { return &everyN{n: 7 + p} }})
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, ss...)
		}
	}
	runAll(t, eng, toolResult)
	out := make([]trajectory, len(seqs))
	for i, s := range seqs {
		if s.State() != StateFinished {
			t.Fatalf("seq %d is %s after the engine went idle", i, s.State())
		}
		out[i] = trajectory{s.Tokens(), s.LossMask(), s.Logprobs(), s.FinishReason(), s.Segments(), s.PromptLen(), s.Text()}
	}
	return out, eng.Stats()
}

func testSampling() Sampling {
	return Sampling{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.01, MaxSampledTokens: 30, EOS: []int32{}}
}

// TestBatchInvariance: the same seeds give the same trajectories at batch
// sizes 16, 3 and 1, with tool pauses and injections reshaping the batch.
func TestBatchInvariance(t *testing.T) {
	pol, _ := loadTiny(t, 2)
	s := testSampling()
	want, st := generateStats(t, pol, 16, 4, s)
	// Both ways of changing the batch were taken: moving rows in place and
	// a full re-layout.
	if st.InPlaceRepacks == 0 || st.InPlaceRepacks == st.Repacks {
		t.Errorf("%d repacks, %d in place: want some of each", st.Repacks, st.InPlaceRepacks)
	}
	for _, c := range []struct{ batch, g int }{{3, 1}, {1, 1}, {16, 2}} {
		got := generate(t, pol, c.batch, c.g, s)
		for i := range want {
			if fmt.Sprint(got[i].tokens) != fmt.Sprint(want[i].tokens) {
				t.Fatalf("batch %d: trajectory %d differs:\n got %v\nwant %v", c.batch, i, got[i].tokens, want[i].tokens)
			}
			if fmt.Sprint(got[i].mask) != fmt.Sprint(want[i].mask) || got[i].finish != want[i].finish {
				t.Fatalf("batch %d: trajectory %d mask or finish differs", c.batch, i)
			}
			for j := range got[i].logprobs {
				if d := math.Abs(float64(got[i].logprobs[j] - want[i].logprobs[j])); d > 1e-4 {
					t.Fatalf("batch %d: trajectory %d logprob %d differs by %g", c.batch, i, j, d)
				}
			}
		}
	}
	// The trajectories are not trivially equal to each other.
	distinct := map[string]bool{}
	pauses := 0
	for _, tr := range want {
		distinct[fmt.Sprint(tr.tokens)] = true
		for _, m := range tr.mask {
			if m == 0 {
				pauses++
			}
		}
	}
	if len(distinct) != len(want) {
		t.Errorf("only %d distinct trajectories of %d", len(distinct), len(want))
	}
	if pauses == 0 {
		t.Error("no tokens were injected: the tool path was not exercised")
	}
}

// TestLogprobsMatchTeacherForced: recorded logprobs equal teacher-forced
// logprobs of the whole sequences (injected tokens included) within 1e-4,
// for sampling at T=0.8 and for greedy decoding (T=1 convention).
func TestLogprobsMatchTeacherForced(t *testing.T) {
	pol, _ := loadTiny(t, 3)
	for _, s := range []Sampling{testSampling(), {MaxSampledTokens: 20, EOS: []int32{}}} {
		trs := generate(t, pol, 8, 4, s)
		var seqs [][]int32
		var plens []int
		for _, tr := range trs {
			seqs = append(seqs, tr.tokens)
			plens = append(plens, tr.prompt)
		}
		temp := s.Temperature
		if temp == 0 {
			temp = 1
		}
		scored, err := pol.ScoreTemperature(context.Background(), seqs, plens, temp)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for i, tr := range trs {
			if len(scored[i]) != len(tr.logprobs) {
				t.Fatalf("seq %d: %d scored, %d recorded", i, len(scored[i]), len(tr.logprobs))
			}
			for j, lp := range tr.logprobs {
				if tr.mask[j] == 0 {
					if lp != 0 {
						t.Fatalf("seq %d: injected token %d has logprob %v, want 0", i, j, lp)
					}
					continue
				}
				if d := math.Abs(float64(lp - scored[i][j])); d > 1e-4 {
					t.Fatalf("T=%v seq %d token %d: recorded %v, teacher-forced %v (diff %g)", s.Temperature, i, j, lp, scored[i][j], d)
				}
				checked++
			}
		}
		if checked < 100 {
			t.Fatalf("only %d logprobs checked", checked)
		}
	}
}

// TestSegments: segments alternate model/tool, cover the response, and
// model segment text is the decoding of its tokens.
func TestSegments(t *testing.T) {
	pol, _ := loadTiny(t, 4)
	trs := generate(t, pol, 16, 4, testSampling())
	tok := pol.Tokenizer()
	for i, tr := range trs {
		resp := tr.tokens[tr.prompt:]
		end := 0
		for k, seg := range tr.segs {
			if seg.Start != end || seg.End <= seg.Start {
				t.Fatalf("seq %d segment %d [%d,%d) does not follow %d", i, k, seg.Start, seg.End, end)
			}
			end = seg.End
			wantMask := uint8(1)
			if seg.Kind == traj.SegmentTool {
				wantMask = 0
			}
			for j := seg.Start; j < seg.End; j++ {
				if tr.mask[j] != wantMask {
					t.Fatalf("seq %d segment %d (%s): mask %d at %d", i, k, seg.Kind, tr.mask[j], j)
				}
			}
			var ids []int32
			for _, id := range resp[seg.Start:seg.End] {
				if id <= tok.MaxID() {
					ids = append(ids, id)
				}
			}
			text, err := tok.Decode(ids, true)
			if err != nil {
				t.Fatal(err)
			}
			if seg.Text != text {
				t.Fatalf("seq %d segment %d text %q, want %q", i, k, seg.Text, text)
			}
		}
		if end != len(resp) {
			t.Fatalf("seq %d: segments end at %d, response has %d tokens", i, end, len(resp))
		}
		var model strings.Builder
		for _, seg := range tr.segs {
			if seg.Kind == traj.SegmentModel {
				model.WriteString(seg.Text)
			}
		}
		if tr.text != model.String() {
			t.Fatalf("seq %d: Text %q, model segments %q", i, tr.text, model.String())
		}
	}
}

// TestFinishReasons covers EOS ids, stop strings, the token cap, the
// sequence-length cap and Finish from the caller.
func TestFinishReasons(t *testing.T) {
	pol, _ := loadTiny(t, 5)
	ctx := context.Background()
	run := func(opts EngineOptions, s Sampling) *Sequence {
		t.Helper()
		eng := NewEngine(pol, opts)
		defer eng.Close()
		ss, err := eng.AddGroup(GroupRequest{ID: "g", Prompt: prompt(4, 1), Seeds: []uint64{7}, Sampling: s})
		if err != nil {
			t.Fatal(err)
		}
		runAll(t, eng, nil)
		return ss[0]
	}
	// EOS: half the vocabulary ends the sequence.
	var eos []int32
	for id := int32(0); id < 320; id += 2 {
		eos = append(eos, id)
	}
	s := run(EngineOptions{}, Sampling{Temperature: 1, EOS: eos, MaxSampledTokens: 200})
	last := s.Tokens()[len(s.Tokens())-1]
	if s.FinishReason() != traj.FinishStop || last%2 != 0 {
		t.Errorf("EOS: finish %q last %d", s.FinishReason(), last)
	}
	for _, id := range s.Tokens()[s.PromptLen() : len(s.Tokens())-1] {
		if id%2 == 0 {
			t.Errorf("EOS: token %d before the end should have stopped", id)
		}
	}
	// Stop strings: every lower-case letter.
	var stops []string
	for c := 'a'; c <= 'z'; c++ {
		stops = append(stops, string(c))
	}
	s = run(EngineOptions{}, Sampling{Temperature: 1, StopStrings: stops, MaxSampledTokens: 500, EOS: []int32{}})
	segs := s.Segments()
	text := segs[len(segs)-1].Text
	if s.FinishReason() != traj.FinishStop || !strings.ContainsAny(text, "abcdefghijklmnopqrstuvwxyz") {
		t.Errorf("stop strings: finish %q text %q", s.FinishReason(), text)
	}
	// Token cap.
	s = run(EngineOptions{}, Sampling{Temperature: 1, MaxSampledTokens: 9, EOS: []int32{}})
	if s.FinishReason() != traj.FinishLength || s.SampledTokens() != 9 {
		t.Errorf("max new tokens: finish %q after %d", s.FinishReason(), s.SampledTokens())
	}
	// Sequence length cap.
	s = run(EngineOptions{MaxSeqLen: 10}, Sampling{Temperature: 1, EOS: []int32{}})
	if s.FinishReason() != traj.FinishLength || len(s.Tokens()) != 10 {
		t.Errorf("max seq len: finish %q at length %d", s.FinishReason(), len(s.Tokens()))
	}

	// Finish from the caller, while running and while paused; Inject on a
	// sequence that is not paused fails.
	eng := NewEngine(pol, EngineOptions{})
	defer eng.Close()
	ss, err := eng.AddGroup(GroupRequest{ID: "g", Prompt: prompt(4, 1), Seeds: []uint64{1, 2},
		Sampling: Sampling{Temperature: 1, EOS: []int32{}, MaxSampledTokens: 50}, NewDetector: func() CallDetector { return &everyN{n: 3} }})
	if err != nil {
		t.Fatal(err)
	}
	if err := ss[0].Inject([]int32{1}); err == nil {
		t.Error("Inject on a queued sequence succeeded")
	}
	if _, err := eng.Step(ctx); err != nil {
		t.Fatal(err)
	}
	ss[0].Finish(traj.FinishMaxTurns)
	var paused *Sequence
	for paused == nil {
		events, err := eng.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.Kind == EventToolCall {
				paused = ev.Seq
			}
		}
	}
	if paused != ss[1] || eng.Running() != 0 {
		t.Fatalf("paused %v, running %d", paused, eng.Running())
	}
	paused.Finish(traj.FinishMaxToolCalls)
	if !eng.Idle() || ss[0].FinishReason() != traj.FinishMaxTurns || ss[1].FinishReason() != traj.FinishMaxToolCalls {
		t.Errorf("idle %v, reasons %q %q", eng.Idle(), ss[0].FinishReason(), ss[1].FinishReason())
	}
}

// TestScoreBatching: scoring in several batches (a small logits budget)
// gives the same logprobs as one sequence at a time, and the prompt is not
// scored.
func TestScoreBatching(t *testing.T) {
	pol, _ := loadTiny(t, 6)
	var seqs [][]int32
	var plens []int
	for i := 0; i < 7; i++ {
		seqs = append(seqs, prompt(3+4*i, i))
		plens = append(plens, 1+i%3)
	}
	seqs = append(seqs, prompt(2, 9))
	plens = append(plens, 2)       // nothing to score
	pol.scoreBudget = 4 * 320 * 40 // about 40 tokens per Run
	batched, err := pol.Score(context.Background(), seqs, plens)
	if err != nil {
		t.Fatal(err)
	}
	pol.scoreBudget = 0
	for i := range seqs {
		alone, err := pol.Score(context.Background(), seqs[i:i+1], plens[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if len(batched[i]) != len(seqs[i])-plens[i] || len(alone[0]) != len(batched[i]) {
			t.Fatalf("seq %d: %d and %d logprobs for %d response tokens", i, len(batched[i]), len(alone[0]), len(seqs[i])-plens[i])
		}
		for j := range alone[0] {
			if d := math.Abs(float64(alone[0][j] - batched[i][j])); d > 1e-4 || batched[i][j] > 0 {
				t.Fatalf("seq %d token %d: batched %v alone %v", i, j, batched[i][j], alone[0][j])
			}
		}
	}
	if _, err := pol.Score(context.Background(), seqs[:1], []int{0}); err == nil {
		t.Error("prompt length 0 accepted")
	}
	if _, err := pol.Score(context.Background(), [][]int32{{1, 999}}, []int{1}); err == nil {
		t.Error("token outside the vocabulary accepted")
	}
}
