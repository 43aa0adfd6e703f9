package learner

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/traj"
)

// recordShape describes the advantage records shapedRecords builds: groups
// of size samples sharing a prompt, random tokens, one injected span (mask
// 0) in each response, behaviour logprobs that are the model's own.
type recordShape struct {
	groups, size     int
	prompt, response [2]int // length ranges, inclusive
	// spanAt and span place the injected span: its start (clamped to the
	// response) and its length, inclusive ranges.
	spanAt, span [2]int
	temp         float64
	// adv is the advantage of sample i of group g on its trained tokens.
	adv  func(g, i int) float32
	seed uint64
}

// shapedRecords builds the records of shape s, on-policy for m: the one
// record fixture of the learner's tests and benchmarks.
func shapedRecords(tb testing.TB, m *train.Model, s recordShape) []traj.AdvantageRecord {
	tb.Helper()
	r := rand.New(rand.NewPCG(s.seed, uint64(s.groups*1000+s.size)))
	between := func(lo, hi int) int { return lo + r.IntN(hi-lo+1) }
	var recs []traj.AdvantageRecord
	var seqs []train.Sequence
	var advs []float32
	for g := range s.groups {
		prompt := make([]int32, between(s.prompt[0], s.prompt[1]))
		for j := range prompt {
			prompt[j] = int32(r.IntN(m.Config.Vocab))
		}
		for i := range s.size {
			respLen := between(s.response[0], s.response[1])
			span := between(s.span[0], s.span[1])
			at := min(between(s.spanAt[0], s.spanAt[1]), max(0, respLen-span))
			span = min(span, respLen-at)
			response := make([]int32, respLen)
			for j := range response {
				response[j] = int32(r.IntN(m.Config.Vocab))
			}
			// The injected span is a tool segment between two model ones.
			t := trajtest.Trajectory(trajtest.Options{Prompt: fmt.Sprintf("p%d", g), Size: s.size, Temperature: &s.temp, PromptTokens: prompt,
				Steps:  []trajtest.Step{{Model: at, Tool: span}, {Model: respLen - at - span}},
				Sample: func(_ int, t *traj.Trajectory) { copy(t.Response(), response) }}, i)
			recs = append(recs, trajtest.Record(t, 0))
			full := append(make([]uint8, len(prompt)), t.LossMask...)
			seqs = append(seqs, train.Sequence{Tokens: t.Tokens, LossMask: full})
			advs = append(advs, s.adv(g, i))
		}
	}
	temps := make([]float64, len(seqs))
	for i := range temps {
		temps[i] = s.temp
	}
	lp, err := m.ForwardLogprobs(seqs, temps)
	if err != nil {
		tb.Fatal(err)
	}
	// Injected tokens keep advantage 0, as advantage writes them.
	for k := range lp.Rows() {
		rec := &recs[lp.Seq[k]]
		j := lp.Pos[k] - rec.PromptLen
		rec.OldLogprobs[j] = float32(lp.Logprobs[k])
		rec.Advantages[j] = advs[lp.Seq[k]]
	}
	return recs
}

// onPolicyRecords is n one-sample groups of short records (prompt 3–6,
// response 6–15 tokens, tokens 2–4 of the response injected) at temperature
// temp, with advantage adv(i) for record i.
func onPolicyRecords(tb testing.TB, m *train.Model, n int, temp float64, adv func(i int) float32) []traj.AdvantageRecord {
	tb.Helper()
	return shapedRecords(tb, m, recordShape{groups: n, size: 1, prompt: [2]int{3, 6}, response: [2]int{6, 15},
		spanAt: [2]int{2, 2}, span: [2]int{3, 3}, temp: temp, adv: func(g, _ int) float32 { return adv(g) }, seed: 7})
}
