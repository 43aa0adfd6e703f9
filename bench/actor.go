// Package bench measures the actor, the work of toolrl bench actor: generated
// tokens/s by concurrency on each model folder and the share of wall time
// spent outside ONNX Runtime's Run, the tool-use workload through the
// orchestrator's runner, the transformers.js peer comparison on the same
// ONNX file, and the resident memory over many short trajectories. All the
// models of one run are measured in it, so that its ratios are comparable;
// ActorReport prints the results as BENCHMARKS.md shows them.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/internal/ort"
)

// ActorOptions describes one actor benchmark run. The caller checks the
// counts (toolrl bench actor refuses, naming the flag, what cannot describe
// a measurement): PromptLen, NewTokens, PeerG and PeerRepeats ≥ 1, the rest
// ≥ 0 and RSSTrajectories a multiple of RSSGroupSize.
type ActorOptions struct {
	// Models are the model folders, measured in this order; a quantized
	// model is compared with the last float model of the same shape
	// (vocabulary and layers) before it.
	Models []string
	// Concurrencies are the numbers of sequences decoded together in the
	// plain rows, one row each (groups of up to 8 samples share a prefill);
	// the tool-use row runs at the last one.
	Concurrencies []int
	// PromptLen is the prompt's length and NewTokens the number of tokens
	// sampled per sequence (temperature 1, top-k 50, EOS ignored).
	PromptLen, NewTokens int
	// Threads is ONNX Runtime's intra-op threads for toolrl and the peer
	// (0: ONNX Runtime's default).
	Threads int
	// Spin lets ONNX Runtime's threads spin in the plain rows (its default;
	// toolrl turns spinning off).
	Spin bool
	// SessionConfig holds ONNX Runtime session configuration entries for
	// the plain rows (e.g. session.force_spinning_stop=1).
	SessionConfig map[string]string
	// Peer also runs the transformers.js peer, PeerScript (and with
	// ToolsEvery > 0 PeerToolsScript), at group size PeerG, PeerRepeats
	// interleaved runs of each side, the best of which are reported.
	Peer                        bool
	PeerScript, PeerToolsScript string
	PeerG, PeerRepeats          int
	// ToolsEvery > 0 adds the tool-use workload: sample i pauses after
	// every ToolsEvery + i%4 sampled tokens and gets 6 injected tokens
	// (benchInjectTokens) each time (0: no tool-use rows).
	ToolsEvery int
	// RSSTrajectories > 0 runs this many short trajectories through the
	// rollout runner on the first model and reports the resident memory
	// (0: no RSS run).
	RSSTrajectories int
	// Progress receives a line per measurement as it finishes, and the
	// peer scripts' stderr (nil: discarded).
	Progress io.Writer
}

// benchInjectTokens is the length of each simulated tool result.
const benchInjectTokens = 6

// ThroughputRow is one measurement of toolrl alone: a model at a
// concurrency, plain decoding or the tool-use workload.
type ThroughputRow struct {
	Model        string  `json:"model"`
	Concurrency  int     `json:"concurrency"`
	Generated    int64   `json:"generated"`
	Seconds      float64 `json:"seconds"`
	TokensPerSec float64 `json:"tokens_per_s"`
	Overhead     float64 `json:"go_overhead"`
	// ToolCalls: simulated tool calls every --tools-every..+3 tokens, each
	// answered by 6 injected tokens.
	ToolCalls       bool    `json:"tool_calls,omitempty"`
	PrefillsPerStep float64 `json:"prefills_per_step,omitempty"`
	// Quantization is the model's quantization (config.json's
	// toolrl_quantization; "" for float weights). Baseline is the float
	// model of the same shape measured earlier in the run, and VsBaseline
	// this row's tokens/s over the baseline's at the same concurrency and
	// workload.
	Quantization string  `json:"quantization,omitempty"`
	Baseline     string  `json:"baseline,omitempty"`
	VsBaseline   float64 `json:"vs_baseline,omitempty"`
}

// PeerRow is one comparison of toolrl with the transformers.js peer on a
// model at group size G, each side's best of the interleaved runs.
type PeerRow struct {
	Model string `json:"model"`
	G     int    `json:"g"`
	// ToolCalls: the tool-use workload (--tools-every), with the peer
	// re-prefilling every row's history after each pause.
	ToolCalls  bool    `json:"tool_calls,omitempty"`
	ToolrlTPS  float64 `json:"toolrl_tokens_per_s"`
	PeerTPS    float64 `json:"peer_tokens_per_s"`
	Ratio      float64 `json:"ratio"`
	PeerORT    string  `json:"peer_ort_version"`
	ToolrlORT  string  `json:"toolrl_ort_version"`
	PeerSecs   float64 `json:"peer_seconds"`
	ToolrlSecs float64 `json:"toolrl_seconds"`
	// Quantized models: the quantization, the float model of the same
	// shape and each side's tokens/s over its own on that model (same G,
	// same workload).
	Quantization  string  `json:"quantization,omitempty"`
	Baseline      string  `json:"baseline,omitempty"`
	ToolrlVsFloat float64 `json:"toolrl_vs_baseline,omitempty"`
	PeerVsFloat   float64 `json:"peer_vs_baseline,omitempty"`
	// Tool-use rows only.
	PauseEvery    int   `json:"pause_every,omitempty"`
	InjectTokens  int   `json:"inject_tokens,omitempty"`
	Generated     int64 `json:"generated,omitempty"`           // sampled tokens, the same on both sides
	Pauses        int64 `json:"pauses,omitempty"`              // resumed tool calls, the same on both sides
	GenerateCalls int   `json:"peer_generate_calls,omitempty"` // the peer's generate() calls
	PeerPrefilled int64 `json:"peer_prefilled,omitempty"`      // history tokens fed to the peer's generate() calls, pads excluded
	ToolrlPrefill int64 `json:"toolrl_prefilled,omitempty"`    // prompt and injected tokens toolrl prefilled
}

// ActorReport is what one run measured, with the options it ran under. Its
// JSON is the file toolrl bench actor --json writes: the keys peer, rss and
// throughput, in that order.
type ActorReport struct {
	Options    ActorOptions    `json:"-"`
	Peer       []PeerRow       `json:"peer"`
	RSS        *RSSReport      `json:"rss"`
	Throughput []ThroughputRow `json:"throughput"`
}

// MeasureActor runs the benchmark o describes, model after model, and
// returns the rows with each quantized row's ratio to its float baseline.
func MeasureActor(ctx context.Context, o ActorOptions) (*ActorReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(o.Models) == 0 || len(o.Concurrencies) == 0 {
		return nil, errors.New("bench actor: no model folder or no concurrency to measure")
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	report := &ActorReport{Options: o}
	// baselines maps a shape (vocabulary, layers) to the last float model
	// of that shape measured so far: a quantized model's rows are compared
	// with its rows.
	baselines := map[[2]int]string{}
	for mi, dir := range o.Models {
		pol, err := actor.Load(ctx, actor.LoadOptions{Dir: dir, IntraOpThreads: o.Threads, InterOpThreads: 1, Spinning: o.Spin, SessionConfig: o.SessionConfig})
		if err != nil {
			return nil, err
		}
		name := filepath.Base(filepath.Clean(dir))
		shape := [2]int{pol.VocabSize(), pol.Layers()}
		quant, baseline := pol.Quantization(), ""
		if quant == "" {
			baselines[shape] = name
		} else {
			baseline = baselines[shape]
		}
		err = measureModel(ctx, o, report, pol, dir, name, quant, baseline)
		pol.Close()
		if err != nil {
			return nil, err
		}
		if o.RSSTrajectories > 0 && mi == 0 {
			// After Close: the run loads the model itself, as a rollout does.
			if report.RSS, err = rssRun(ctx, dir, o.Threads, o.RSSTrajectories); err != nil {
				return nil, err
			}
		}
	}
	quantizedBaselines(report.Throughput, report.Peer)
	return report, nil
}

// measureModel appends the rows of one model, loaded as pol from dir, to
// report: the plain rows, the tool-use row and the peer comparison.
func measureModel(ctx context.Context, o ActorOptions, report *ActorReport, pol *actor.Policy, dir, name, quant, baseline string) error {
	// Warm up: first-run allocations inside ORT.
	if _, err := measureDecoding(ctx, pol, throughputOptions{concurrency: 2, promptLen: o.PromptLen, newTokens: 2}); err != nil {
		return err
	}
	for _, c := range o.Concurrencies {
		res, err := measureDecoding(ctx, pol, throughputOptions{concurrency: c, promptLen: o.PromptLen, newTokens: o.NewTokens})
		if err != nil {
			return err
		}
		report.Throughput = append(report.Throughput, ThroughputRow{Model: name, Concurrency: c, Generated: res.generated, Seconds: res.wall.Seconds(), TokensPerSec: res.tokensPerSecond(), Overhead: res.overhead(),
			Quantization: quant, Baseline: baseline})
		fmt.Fprintf(o.Progress, "bench actor: %s concurrency %d: %.1f tokens/s, overhead %.1f%%\n", name, c, res.tokensPerSecond(), 100*res.overhead())
	}
	if o.ToolsEvery > 0 {
		c := o.Concurrencies[len(o.Concurrencies)-1]
		res, err := measureRunner(ctx, runnerWorkload{model: dir, threads: o.Threads, throughputOptions: throughputOptions{
			concurrency: c, groupSize: toolGroupSize(c), promptLen: o.PromptLen, newTokens: o.NewTokens,
			pauseEvery: o.ToolsEvery, injectTokens: benchInjectTokens}})
		if err != nil {
			return err
		}
		report.Throughput = append(report.Throughput, ThroughputRow{Model: name, Concurrency: c, Generated: res.generated, Seconds: res.wall.Seconds(), TokensPerSec: res.tokensPerSecond(),
			Overhead: res.overhead(), ToolCalls: true, PrefillsPerStep: float64(res.stats.PrefillRuns) / float64(res.stats.DecodeRuns),
			Quantization: quant, Baseline: baseline})
		fmt.Fprintf(o.Progress, "bench actor: %s concurrency %d with tool calls: %.1f tokens/s, overhead %.1f%%\n", name, c, res.tokensPerSecond(), 100*res.overhead())
	}
	if !o.Peer {
		return nil
	}
	// Interleaved, best of --peer-repeats for each side: on a shared
	// machine the load drifts, and the fastest run is the least
	// disturbed one.
	var best throughputResult
	var bestPeer peerResult
	for rep := 0; rep < o.PeerRepeats; rep++ {
		res, err := measureDecoding(ctx, pol, throughputOptions{concurrency: o.PeerG, groupSize: o.PeerG, promptLen: o.PromptLen, newTokens: o.NewTokens, jobSeed: uint64(rep)})
		if err != nil {
			return err
		}
		if rep == 0 || res.tokensPerSecond() > best.tokensPerSecond() {
			best = res
		}
		pr, err := runPeer(ctx, o, o.PeerScript, dir)
		if err != nil {
			return err
		}
		if pr.TokensPerS > bestPeer.TokensPerS {
			bestPeer = pr
		}
		fmt.Fprintf(o.Progress, "bench actor: %s G=%d run %d: toolrl %.1f tokens/s, transformers.js %.1f tokens/s\n", name, o.PeerG, rep+1, res.tokensPerSecond(), pr.TokensPerS)
	}
	report.Peer = append(report.Peer, PeerRow{Model: name, G: o.PeerG, ToolrlTPS: best.tokensPerSecond(), PeerTPS: bestPeer.TokensPerS,
		Ratio: best.tokensPerSecond() / bestPeer.TokensPerS, PeerORT: bestPeer.ORTVersion, ToolrlORT: ort.Version(),
		PeerSecs: bestPeer.Seconds, ToolrlSecs: best.wall.Seconds(), Quantization: quant, Baseline: baseline})
	if o.ToolsEvery > 0 {
		row, err := peerTools(ctx, o, dir, name)
		if err != nil {
			return err
		}
		row.Quantization, row.Baseline = quant, baseline
		report.Peer = append(report.Peer, row)
	}
	return nil
}

// toolGroupSize is the group size of the tool-use row at concurrency c:
// groups of up to 8 samples that fill c exactly (the runner samples whole
// groups).
func toolGroupSize(c int) int {
	g := min(8, c)
	for c%g != 0 {
		g--
	}
	return g
}

// quantizedBaselines gives each quantized row the ratio of its tokens/s to
// its baseline's row at the same concurrency and workload (and each
// quantized peer row both sides' ratios to theirs); rows whose baseline has
// no such row keep a zero ratio.
func quantizedBaselines(rows []ThroughputRow, peers []PeerRow) {
	for i := range peers {
		p := &peers[i]
		if p.Baseline == "" {
			continue
		}
		for _, b := range peers {
			if b.Model == p.Baseline && b.G == p.G && b.ToolCalls == p.ToolCalls && b.ToolrlTPS > 0 && b.PeerTPS > 0 {
				p.ToolrlVsFloat, p.PeerVsFloat = p.ToolrlTPS/b.ToolrlTPS, p.PeerTPS/b.PeerTPS
			}
		}
	}
	for i := range rows {
		r := &rows[i]
		if r.Baseline == "" {
			continue
		}
		for _, b := range rows {
			if b.Model == r.Baseline && b.Concurrency == r.Concurrency && b.ToolCalls == r.ToolCalls && b.TokensPerSec > 0 {
				r.VsBaseline = r.TokensPerSec / b.TokensPerSec
			}
		}
	}
}
