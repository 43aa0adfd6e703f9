package actor

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/traj"
)

// loadTinyPair writes the tiny random Llama twice, in optimum's layout and
// as a fused graph (toolrl model build --fused), and loads both with one
// ORT thread.
func loadTinyPair(t testing.TB, seed uint64) (optimum, fused *Policy, ref *llama.Reference) {
	return loadTinyPairConfig(t, seed, func(*llama.Config) {})
}

func loadTinyPairConfig(t testing.TB, seed uint64, edit func(*llama.Config)) (optimum, fused *Policy, ref *llama.Reference) {
	t.Helper()
	testsupport.RequireORT(t)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.InitializerRange = 0.2 // as tinyModel: sharp attention, peaked logits
	edit(&cfg)
	w, err := llama.RandomWeights(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	if ref, err = llama.NewReference(cfg, w); err != nil {
		t.Fatal(err)
	}
	load := func(name string, fused bool) *Policy {
		dir := filepath.Join(t.TempDir(), name)
		if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, ONNX: llama.ONNXOptions{Fused: fused}}); err != nil {
			t.Fatal(err)
		}
		pol, err := Load(context.Background(), LoadOptions{Dir: dir, IntraOpThreads: 1, InterOpThreads: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pol.Close() })
		if pol.io.fused != fused {
			t.Fatalf("%s: discovered fused=%v", name, pol.io.fused)
		}
		return pol
	}
	return load("optimum", false), load("fused", true), ref
}

// referenceLogprobs returns log-softmax(logits/temp)[token] of every
// response token of seq, from the Go reference's full forward.
func referenceLogprobs(t *testing.T, ref *llama.Reference, seq []int32, promptLen int, temp float64) []float64 {
	t.Helper()
	ids := make([]int64, len(seq))
	for i, id := range seq {
		ids[i] = int64(id)
	}
	out, err := ref.Forward(llama.Inputs{InputIDs: [][]int64{ids}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lp := make([]float64, 0, len(seq)-promptLen)
	for p := promptLen; p < len(seq); p++ {
		row := out.At(0, p-1)
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, float64(v)/temp)
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v)/temp - m)
		}
		lp = append(lp, float64(row[seq[p]])/temp-m-math.Log(sum))
	}
	return lp
}

func sameTrajectories(t *testing.T, what string, got, want []trajectory) {
	t.Helper()
	for i := range want {
		if fmt.Sprint(got[i].tokens) != fmt.Sprint(want[i].tokens) {
			t.Fatalf("%s: trajectory %d differs:\n got %v\nwant %v", what, i, got[i].tokens, want[i].tokens)
		}
		if fmt.Sprint(got[i].mask) != fmt.Sprint(want[i].mask) || got[i].finish != want[i].finish {
			t.Fatalf("%s: trajectory %d mask or finish differs", what, i)
		}
		for j := range got[i].logprobs {
			if d := math.Abs(float64(got[i].logprobs[j] - want[i].logprobs[j])); d > 1e-4 {
				t.Fatalf("%s: trajectory %d logprob %d differs by %g", what, i, j, d)
			}
		}
	}
}

// The fused graph's trajectories, with tool pauses and injections, are the
// same at batch sizes 16, 3 and 1 and group sizes 4, 2 and 1; they are the
// optimum layout's trajectories; and every recorded logprob is the Go
// reference's within 1e-4.
func TestFusedBatchInvarianceAndReference(t *testing.T) {
	optimum, fused, ref := loadTinyPair(t, 2)
	s := testSampling()
	want, st := generateStats(t, fused, 16, 4, s)
	if st.InPlaceRepacks == 0 || st.InPlaceRepacks == st.Repacks {
		t.Errorf("%d repacks, %d in place: want some of each", st.Repacks, st.InPlaceRepacks)
	}
	for _, c := range []struct{ batch, g int }{{3, 1}, {1, 1}, {16, 2}} {
		sameTrajectories(t, fmt.Sprintf("fused batch %d group %d", c.batch, c.g), generate(t, fused, c.batch, c.g, s), want)
	}
	sameTrajectories(t, "optimum layout vs fused", generate(t, optimum, 16, 4, s), want)

	pauses, checked := 0, 0
	distinct := map[string]bool{}
	for i, tr := range want {
		distinct[fmt.Sprint(tr.tokens)] = true
		lp := referenceLogprobs(t, ref, tr.tokens, tr.prompt, s.Temperature)
		for j, m := range tr.mask {
			if m == 0 {
				pauses++
				continue
			}
			if d := math.Abs(float64(tr.logprobs[j]) - lp[j]); d > 1e-4 {
				t.Fatalf("trajectory %d token %d: recorded logprob %v, reference %v (diff %.3g)", i, j, tr.logprobs[j], lp[j], d)
			}
			checked++
		}
	}
	if pauses == 0 || checked < 100 || len(distinct) != len(want) {
		t.Fatalf("%d injected tokens, %d logprobs checked, %d distinct trajectories of %d: the test did not exercise the engine", pauses, checked, len(distinct), len(want))
	}
}

// Long sequences outgrow the preallocated buffer (re-laid out with room to
// spare) and chunked prefills split a prompt over several Runs, a second
// prompt on top of the cache: the logprobs stay the reference's.
func TestFusedGrowthAndChunkedPrefill(t *testing.T) {
	_, fused, ref := loadTinyPair(t, 3)
	fused.prefillBudget = 4 * fused.io.vocab * 5 // 5 columns per prefill Run
	eng := NewEngine(fused, EngineOptions{MaxBatch: 4})
	defer eng.Close()
	s := Sampling{Temperature: 1, MaxSampledTokens: 150, EOS: []int32{}}
	pr := prompt(23, 1)
	seqs, err := eng.AddGroup(GroupRequest{ID: "long", Prompt: pr, Seeds: []uint64{1, 2, 3}, Sampling: s,
		NewDetector: func() CallDetector { return &everyN{n: 61} }})
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, eng, func(s *Sequence) []int32 { return prompt(12, s.Len()) })
	st := eng.Stats()
	if st.PrefillRuns < 5+3*3 {
		t.Errorf("%d prefill runs: the prompt (22 tokens) and the injections (12) were not chunked by 5", st.PrefillRuns)
	}
	for i, sq := range seqs {
		if sq.Len() < 64+len(pr) {
			t.Fatalf("sequence %d has %d tokens: it did not outgrow the first buffer", i, sq.Len())
		}
		lp := referenceLogprobs(t, ref, sq.Tokens(), sq.PromptLen(), 1)
		for j, m := range sq.LossMask() {
			if m == 1 && math.Abs(float64(sq.Logprobs()[j])-lp[j]) > 1e-4 {
				t.Fatalf("sequence %d token %d: logprob %v, reference %v", i, j, sq.Logprobs()[j], lp[j])
			}
		}
	}
	// Scoring the same sequences, batched and in chunks, gives the same.
	var all [][]int32
	var plens []int
	for _, sq := range seqs {
		all, plens = append(all, sq.Tokens()), append(plens, sq.PromptLen())
	}
	for _, budget := range []int{0, 4 * fused.io.vocab * 40} {
		fused.scoreBudget = budget
		scored, err := fused.Score(context.Background(), all, plens)
		if err != nil {
			t.Fatal(err)
		}
		for i, sq := range seqs {
			for j, m := range sq.LossMask() {
				if m == 1 && math.Abs(float64(scored[i][j]-sq.Logprobs()[j])) > 1e-4 {
					t.Fatalf("score budget %d: sequence %d token %d: scored %v, recorded %v", budget, i, j, scored[i][j], sq.Logprobs()[j])
				}
			}
		}
	}
}

// The same seeds give the same trajectories on a fresh engine; other seeds
// give others.
func TestFusedSeedDeterminism(t *testing.T) {
	_, fused, _ := loadTinyPair(t, 4)
	s := testSampling()
	a := generate(t, fused, 8, 4, s)
	sameTrajectories(t, "second run", generate(t, fused, 8, 4, s), a)
	eng := NewEngine(fused, EngineOptions{MaxBatch: 8})
	defer eng.Close()
	other, err := eng.AddGroup(GroupRequest{ID: "p0", Prompt: prompt(3, 0), Seeds: []uint64{SampleSeed(7, "p0", 0)}, Sampling: s,
		NewDetector: func() CallDetector { return &everyN{n: 7} }})
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, eng, toolResult)
	if fmt.Sprint(other[0].Tokens()) == fmt.Sprint(a[0].tokens) {
		t.Fatal("another seed gave the same trajectory")
	}
}

// A fused graph's interface has no position_ids; one with it is refused, and
// an optimum graph without it still is.
func TestDiscoverFusedIO(t *testing.T) {
	ins, outs := optimumIO(2, 1) // float32 cache
	noPos := append(ins[:2:2], ins[3:]...)
	l, err := discoverIO(noPos, outs, true)
	if err != nil {
		t.Fatal(err)
	}
	if !l.fused || l.hasPositionIDs || l.layers != 2 || fmt.Sprint(l.inputNames[:3]) != "[input_ids attention_mask past_key_values.0.key]" {
		t.Fatalf("fused layout %+v", l)
	}
	if _, err := discoverIO(ins, outs, true); err == nil || !strings.Contains(err.Error(), `"position_ids"`) {
		t.Fatalf("fused graph with position_ids: %v", err)
	}
	if _, err := discoverIO(noPos, outs, false); err == nil || !strings.Contains(err.Error(), "position_ids") {
		t.Fatalf("optimum graph without position_ids: %v", err)
	}
}

// A fused graph's rotary tables end at max_position_embeddings: the engine
// holds sequences to it (FinishLength) whatever MaxSeqLen asks.
func TestFusedContextIsMaxPositions(t *testing.T) {
	_, fused, _ := loadTinyPairConfig(t, 5, func(c *llama.Config) { c.MaxPositionEmbeddings = 40 })
	eng := NewEngine(fused, EngineOptions{MaxBatch: 2, MaxSeqLen: 1000})
	defer eng.Close()
	seqs, err := eng.AddGroup(GroupRequest{ID: "g", Prompt: prompt(5, 1), Seeds: []uint64{1, 2}, Sampling: Sampling{Temperature: 1, EOS: []int32{}}})
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, eng, toolResult)
	for i, s := range seqs {
		if s.Len() != 40 || s.FinishReason() != traj.FinishLength {
			t.Fatalf("sequence %d: %d tokens, finish %q; want 40 and %q", i, s.Len(), s.FinishReason(), traj.FinishLength)
		}
	}
}
