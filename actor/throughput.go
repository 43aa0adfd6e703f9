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
	// MaxNewTokens is set to NewTokens, so every sequence has the same length.
	Sampling *Sampling
	JobSeed  uint64
	// PauseEvery > 0 pauses each sequence at a simulated tool call every
	// PauseEvery to PauseEvery+3 sampled tokens (staggered across the group)
	// and injects InjectTokens tokens, so that the batch changes as it does
	// in tool-use rollouts.
	PauseEvery   int
	InjectTokens int
}

// everyNTokens is MeasureThroughput's simulated call detector.
type everyNTokens struct{ n, seen int }

// Feed implements CallDetector.
func (d *everyNTokens) Feed(string) bool { d.seen++; return d.seen%d.n == 0 }

// ThroughputResult is what MeasureThroughput saw.
type ThroughputResult struct {
	Options   ThroughputOptions
	Generated int64         // tokens sampled
	Wall      time.Duration // from the first AddGroup to the last event
	Stats     Stats
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
	s.MaxNewTokens = o.NewTokens
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
			// Stagger the calls (every PauseEvery..PauseEvery+3 tokens) so
			// that sequences do not pause in lockstep.
			k := 0
			req.NewDetector = func() CallDetector { k++; return &everyNTokens{n: o.PauseEvery + k%4} }
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
			}
		}
	}
	res.Wall = time.Since(start)
	res.Stats = eng.Stats()
	res.Generated = res.Stats.SampledTokens
	return res, nil
}
