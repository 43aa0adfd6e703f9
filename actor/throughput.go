package actor

import (
	"context"
	"fmt"
	"time"
)

// ThroughputOptions describes a throughput measurement: Sequences
// sequences (groups of GroupSize samples of one prompt), at most Concurrency
// decoded together, each generating exactly NewTokens tokens.
type ThroughputOptions struct {
	Concurrency int // MaxBatch; default 16
	Sequences   int // default Concurrency
	GroupSize   int // default min(8, Concurrency)
	PromptLen   int // default 32
	NewTokens   int // default 64
	// Sampling defaults to temperature 1, top-k 50. EOS ids are ignored and
	// MaxSampledTokens is set to NewTokens, so every sequence has the same length.
	Sampling *Sampling
	JobSeed  uint64
	// PauseEvery > 0 pauses each sequence at simulated tool calls on the
	// schedule of BenchPausePoints (every PauseEvery to PauseEvery+3 sampled
	// tokens, staggered across the group) and injects
	// BenchPrompt(InjectTokens), so that the batch changes as it does in
	// tool-use rollouts.
	PauseEvery   int
	InjectTokens int
}

// BenchPauseInterval is MeasureThroughput's simulated tool-call interval:
// with PauseEvery p > 0, sample i of a group (0-based) completes a call after
// every BenchPauseInterval(p, i) = p + i%4 sampled tokens. Every sampled token
// counts, the first one (sampled by the prefill) included.
func BenchPauseInterval(pauseEvery, sample int) int { return pauseEvery + sample%4 }

// BenchPausePoints lists the sampled-token counts after which sample i of a
// group that samples newTokens tokens pauses, gets the injected tokens
// prefilled and resumes: the multiples of BenchPauseInterval below newTokens.
// A call completed by the newTokens-th token also gets its tokens injected
// (they end the trajectory) but nothing more is run, so it is not listed.
// The transformers.js peer (scripts/actor/peer_tools.mjs) follows the same
// schedule.
func BenchPausePoints(pauseEvery, sample, newTokens int) []int {
	if pauseEvery <= 0 {
		return nil
	}
	n := BenchPauseInterval(pauseEvery, sample)
	var pts []int
	for t := n; t < newTokens; t += n {
		pts = append(pts, t)
	}
	return pts
}

// everyNTokens is MeasureThroughput's simulated call detector: a call
// completes after every n sampled tokens (Feed is called once per sampled
// token, whatever its text).
type everyNTokens struct{ n, seen int }

// Feed implements CallDetector.
func (d *everyNTokens) Feed(string) bool { d.seen++; return d.seen%d.n == 0 }

// benchDetectors returns a GroupRequest.NewDetector that gives the i-th
// sample it is called for (AddGroup calls it in sample order) the interval
// BenchPauseInterval(pauseEvery, i).
func benchDetectors(pauseEvery int) func() CallDetector {
	i := 0
	return func() CallDetector {
		d := &everyNTokens{n: BenchPauseInterval(pauseEvery, i)}
		i++
		return d
	}
}

// ThroughputResult is what MeasureThroughput saw.
type ThroughputResult struct {
	Options   ThroughputOptions
	Generated int64 // tokens sampled
	// Pauses counts the simulated tool calls after which a sequence resumed
	// (injected tokens prefilled, decoding continued).
	Pauses int64
	Wall   time.Duration // from the first AddGroup to the last event
	Stats  Stats
}

// TokensPerSecond is generated tokens over wall time.
func (r ThroughputResult) TokensPerSecond() float64 {
	return float64(r.Generated) / r.Wall.Seconds()
}

// Overhead is the fraction of wall time spent outside ONNX Runtime's Run.
func (r ThroughputResult) Overhead() float64 {
	return float64(r.Wall-r.Stats.RunTime) / float64(r.Wall)
}

// BenchPrompt is the benchmark prompt: byte-token ids 'a' + 7i mod 26 (the
// peer script uses the same ids).
func BenchPrompt(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32('a' + (i*7)%26)
	}
	return p
}

// MeasureThroughput runs one throughput measurement on a fresh engine.
func MeasureThroughput(ctx context.Context, pol *Policy, o ThroughputOptions) (ThroughputResult, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Sequences <= 0 {
		o.Sequences = o.Concurrency
	}
	if o.GroupSize <= 0 {
		o.GroupSize = min(8, o.Concurrency)
	}
	if o.PromptLen <= 0 {
		o.PromptLen = 32
	}
	if o.NewTokens <= 0 {
		o.NewTokens = 64
	}
	s := Sampling{Temperature: 1, TopK: 50}
	if o.Sampling != nil {
		s = *o.Sampling
	}
	s.EOS = []int32{}
	s.MaxSampledTokens = o.NewTokens
	s.StopStrings = nil
	res := ThroughputResult{Options: o}

	eng := NewEngine(pol, EngineOptions{MaxBatch: o.Concurrency})
	defer eng.Close()
	start := time.Now()
	prompt := BenchPrompt(o.PromptLen)
	for g := 0; g*o.GroupSize < o.Sequences; g++ {
		n := min(o.GroupSize, o.Sequences-g*o.GroupSize)
		id := fmt.Sprint("bench-", g)
		seeds := make([]uint64, n)
		for i := range seeds {
			seeds[i] = SampleSeed(o.JobSeed, id, i)
		}
		req := GroupRequest{ID: id, Prompt: prompt, Seeds: seeds, Sampling: s}
		if o.PauseEvery > 0 {
			// Staggered calls, so that sequences do not pause in lockstep.
			req.NewDetector = benchDetectors(o.PauseEvery)
		}
		if _, err := eng.AddGroup(req); err != nil {
			return res, err
		}
	}
	inject := BenchPrompt(o.InjectTokens)
	for !eng.Idle() {
		events, err := eng.Step(ctx)
		if err != nil {
			return res, err
		}
		for _, ev := range events {
			if ev.Kind == EventToolCall {
				if err := ev.Seq.Inject(inject); err != nil {
					return res, err
				}
				if ev.Seq.State() != StateFinished {
					res.Pauses++
				}
			}
		}
	}
	res.Wall = time.Since(start)
	res.Stats = eng.Stats()
	res.Generated = res.Stats.SampledTokens
	return res, nil
}
