package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/internal/atomicfile"
	"github.com/toolrl/toolrl/internal/ort"
	"github.com/toolrl/toolrl/traj"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks (actor throughput against peers)",
	}
	cmd.AddCommand(newBenchActorCmd())
	return cmd
}

type benchActorFlags struct {
	models      []string
	concurrency string
	promptLen   int
	newTokens   int
	threads     int
	peer        bool
	spin        bool
	ortConfig   map[string]string
	peerScript  string
	toolsScript string
	peerG       int
	peerRepeats int
	toolsEvery  int
	rss         int
	jsonOut     string
}

func newBenchActorCmd() *cobra.Command {
	var f benchActorFlags
	cmd := &cobra.Command{
		Use:   "actor --model DIR [--model DIR...] [--peer] [--rss N]",
		Short: "Actor throughput: tokens/s by concurrency, Go-side overhead, ratio to transformers.js",
		Long: `Measures the actor on each model folder, all in one run so that the ratios are
comparable: generated tokens/s at each concurrency (sequences decoded
together; groups of up to 8 samples share a prefill), and the share of wall
time spent outside ONNX Runtime's Run (Go-side overhead).

--peer also runs @huggingface/transformers generate() (scripts/actor/peer.mjs,
node, onnxruntime-node 1.30.0, the same ONNX file) on G sequences of the same
prompt with the same sampling (temperature 1, top-k 50, exactly
--new-tokens tokens) and reports toolrl's tokens/s over the peer's.

With --tools-every P as well, the peer comparison adds the tool-use workload
(rows "G + tool calls"): sample i pauses after every P + i%4 sampled tokens
(not at its last token) and gets 6 injected tokens each time, on both sides.
toolrl keeps each paused sequence's KV cache, prefills only the injected
tokens and keeps the other sequences decoding. The peer
(scripts/actor/peer_tools.mjs) does what a transformers.js user does:
generate() on the G rows with a per-row StoppingCriteria at each row's next
pause, then appends the injected tokens and calls generate() again on every
row's whole history, left-padded (full re-prefill), until each row has
sampled --new-tokens tokens. Both sides count only sampled tokens; the run
fails if their counts of sampled tokens or pauses differ.

--rss N runs N short trajectories (groups of 8, with tool-call pauses and
injections) and reports the process's resident memory before and after.

The plain rows measure the actor's engine directly (raw decoding throughput:
no call is made, so no rollout loop is involved). The tool-call rows and the
RSS run go through the orchestrator's runner, the loop of toolrl rollout and
toolrl train: its call detector pauses on the schedule above, its executor
runs a tool that returns the injected tokens, and it builds and scores the
trajectories; each such run loads the model folder as a rollout does
(--spin applies to the plain rows only) and samples one warm-up group first.
--threads 0 leaves ONNX Runtime's default; --tools-every 0 and --rss 0 turn
those runs off.`,
		Example: `  toolrl bench actor --model out/models/smollm2-135m-random --peer
  toolrl bench actor --model /tmp/tiny --concurrency 1,4 --new-tokens 16 --rss 10000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBenchActor(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.models, "model", nil, "model folder (repeatable)")
	fl.StringVar(&f.concurrency, "concurrency", "1,4,16,64", "comma-separated concurrencies")
	fl.IntVar(&f.promptLen, "prompt-len", 32, "prompt tokens (≥ 1)")
	fl.IntVar(&f.newTokens, "new-tokens", 64, "tokens generated per sequence (≥ 1)")
	fl.IntVar(&f.threads, "threads", 0, "ONNX Runtime intra-op threads for toolrl and the peer (0: ORT default)")
	fl.BoolVar(&f.peer, "peer", false, "also run the transformers.js peer at G=--peer-g")
	fl.BoolVar(&f.spin, "spin", false, "let ONNX Runtime's threads spin (ORT's default; toolrl turns spinning off)")
	fl.StringToStringVar(&f.ortConfig, "ort-config", nil, "ONNX Runtime session configuration entries KEY=VALUE for the plain rows (repeatable), e.g. session.force_spinning_stop=1")
	fl.StringVar(&f.peerScript, "peer-script", "scripts/actor/peer.mjs", "the peer benchmark script")
	fl.StringVar(&f.toolsScript, "peer-tools-script", "scripts/actor/peer_tools.mjs", "the peer's tool-use benchmark script (with --tools-every)")
	fl.IntVar(&f.peerG, "peer-g", 8, "group size of the peer comparison (≥ 1)")
	fl.IntVar(&f.peerRepeats, "peer-repeats", 3, "interleaved runs of each side in the peer comparison (best of; ≥ 1)")
	fl.IntVar(&f.toolsEvery, "tools-every", 0, "also measure the highest concurrency (and, with --peer, the peer at G) with a simulated tool call every N..N+3 tokens (6 injected tokens each), through the rollout runner (0: off)")
	fl.IntVar(&f.rss, "rss", 0, "run this many short trajectories (a multiple of 8) through the rollout runner on the first model and report RSS (0: off)")
	fl.StringVar(&f.jsonOut, "json", "", "also write the results as JSON to this file")
	return cmd
}

// check refuses the flags that cannot describe a measurement, naming the
// flag: negatives everywhere, and 0 where it means nothing (--threads 0 is
// ONNX Runtime's default, --tools-every 0 and --rss 0 turn those runs off).
func (f benchActorFlags) check() error {
	for _, c := range []struct {
		name     string
		value    int
		zeroOK   bool
		zeroMean string
	}{
		{"--prompt-len", f.promptLen, false, ""},
		{"--new-tokens", f.newTokens, false, ""},
		{"--peer-g", f.peerG, false, ""},
		{"--peer-repeats", f.peerRepeats, false, ""},
		{"--threads", f.threads, true, "ONNX Runtime's default"},
		{"--tools-every", f.toolsEvery, true, "no tool-use rows"},
		{"--rss", f.rss, true, "no RSS run"},
	} {
		switch {
		case c.zeroOK && c.value < 0:
			return usageErrorf("bench actor: %s %d: want ≥ 0 (0: %s)", c.name, c.value, c.zeroMean)
		case !c.zeroOK && c.value < 1:
			return usageErrorf("bench actor: %s %d: want ≥ 1", c.name, c.value)
		}
	}
	if f.rss%rssGroup != 0 {
		return usageErrorf("bench actor: --rss %d: want a multiple of %d (the run samples groups of %d)", f.rss, rssGroup, rssGroup)
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

type benchRow struct {
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

// quantizedBaselines gives each quantized row the ratio of its tokens/s to
// its baseline's row at the same concurrency and workload (and each
// quantized peer row both sides' ratios to theirs); rows whose baseline has
// no such row keep a zero ratio.
func quantizedBaselines(rows []benchRow, peers []peerRow) {
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

type peerRow struct {
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

// benchInjectTokens is the length of each simulated tool result.
const benchInjectTokens = 6

type rssReport struct {
	Trajectories int     `json:"trajectories"`
	StartRSSMiB  float64 `json:"start_rss_mib"`
	EndRSSMiB    float64 `json:"end_rss_mib"`
	// ChunkRSSMiB is the RSS after each chunk of 1000 trajectories.
	ChunkRSSMiB []float64 `json:"chunk_rss_mib"`
	Seconds     float64   `json:"seconds"`
}

func runBenchActor(ctx context.Context, w io.Writer, f benchActorFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(f.models) == 0 {
		return usageErrorf("bench actor: --model is required")
	}
	if err := f.check(); err != nil {
		return err
	}
	var concs []int
	for _, s := range strings.Split(f.concurrency, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c <= 0 {
			return usageErrorf("bench actor: --concurrency %q: want positive integers", f.concurrency)
		}
		concs = append(concs, c)
	}
	var rows []benchRow
	var peers []peerRow
	var rss *rssReport
	// baselines maps a shape (vocabulary, layers) to the last float model
	// of that shape measured so far: a quantized model's rows are compared
	// with its rows.
	baselines := map[[2]int]string{}
	for mi, dir := range f.models {
		pol, err := actor.Load(ctx, actor.LoadOptions{Dir: dir, IntraOpThreads: f.threads, InterOpThreads: 1, Spinning: f.spin, SessionConfig: f.ortConfig})
		if err != nil {
			return err
		}
		name := filepath.Base(filepath.Clean(dir))
		shape := [2]int{pol.VocabSize(), pol.Layers()}
		quant, baseline := pol.Quantization(), ""
		if quant == "" {
			baselines[shape] = name
		} else {
			baseline = baselines[shape]
		}
		// Warm up: first-run allocations inside ORT.
		if _, err := measureDecoding(ctx, pol, throughputOptions{concurrency: 2, promptLen: f.promptLen, newTokens: 2}); err != nil {
			pol.Close()
			return err
		}
		for _, c := range concs {
			res, err := measureDecoding(ctx, pol, throughputOptions{concurrency: c, promptLen: f.promptLen, newTokens: f.newTokens})
			if err != nil {
				pol.Close()
				return err
			}
			rows = append(rows, benchRow{Model: name, Concurrency: c, Generated: res.generated, Seconds: res.wall.Seconds(), TokensPerSec: res.tokensPerSecond(), Overhead: res.overhead(),
				Quantization: quant, Baseline: baseline})
			fmt.Fprintf(os.Stderr, "bench actor: %s concurrency %d: %.1f tokens/s, overhead %.1f%%\n", name, c, res.tokensPerSecond(), 100*res.overhead())
		}
		if f.toolsEvery > 0 {
			c := concs[len(concs)-1]
			res, err := measureRunner(ctx, runnerWorkload{model: dir, threads: f.threads, throughputOptions: throughputOptions{
				concurrency: c, groupSize: toolGroupSize(c), promptLen: f.promptLen, newTokens: f.newTokens,
				pauseEvery: f.toolsEvery, injectTokens: benchInjectTokens}})
			if err != nil {
				pol.Close()
				return err
			}
			rows = append(rows, benchRow{Model: name, Concurrency: c, Generated: res.generated, Seconds: res.wall.Seconds(), TokensPerSec: res.tokensPerSecond(),
				Overhead: res.overhead(), ToolCalls: true, PrefillsPerStep: float64(res.stats.PrefillRuns) / float64(res.stats.DecodeRuns),
				Quantization: quant, Baseline: baseline})
			fmt.Fprintf(os.Stderr, "bench actor: %s concurrency %d with tool calls: %.1f tokens/s, overhead %.1f%%\n", name, c, res.tokensPerSecond(), 100*res.overhead())
		}
		if f.peer {
			// Interleaved, best of --peer-repeats for each side: on a shared
			// machine the load drifts, and the fastest run is the least
			// disturbed one.
			var best throughputResult
			var bestPeer peerResult
			for rep := 0; rep < f.peerRepeats; rep++ {
				res, err := measureDecoding(ctx, pol, throughputOptions{concurrency: f.peerG, groupSize: f.peerG, promptLen: f.promptLen, newTokens: f.newTokens, jobSeed: uint64(rep)})
				if err != nil {
					pol.Close()
					return err
				}
				if rep == 0 || res.tokensPerSecond() > best.tokensPerSecond() {
					best = res
				}
				pr, err := runPeer(ctx, f, f.peerScript, dir)
				if err != nil {
					pol.Close()
					return err
				}
				if pr.TokensPerS > bestPeer.TokensPerS {
					bestPeer = pr
				}
				fmt.Fprintf(os.Stderr, "bench actor: %s G=%d run %d: toolrl %.1f tokens/s, transformers.js %.1f tokens/s\n", name, f.peerG, rep+1, res.tokensPerSecond(), pr.TokensPerS)
			}
			peers = append(peers, peerRow{Model: name, G: f.peerG, ToolrlTPS: best.tokensPerSecond(), PeerTPS: bestPeer.TokensPerS,
				Ratio: best.tokensPerSecond() / bestPeer.TokensPerS, PeerORT: bestPeer.ORTVersion, ToolrlORT: ort.Version(),
				PeerSecs: bestPeer.Seconds, ToolrlSecs: best.wall.Seconds(), Quantization: quant, Baseline: baseline})
			if f.toolsEvery > 0 {
				row, err := peerTools(ctx, f, dir, name)
				if err != nil {
					pol.Close()
					return err
				}
				row.Quantization, row.Baseline = quant, baseline
				peers = append(peers, row)
			}
		}
		pol.Close()
		if f.rss > 0 && mi == 0 {
			// After Close: the run loads the model itself, as a rollout does.
			if rss, err = rssRun(ctx, dir, f.threads, f.rss); err != nil {
				return err
			}
		}
	}

	quantizedBaselines(rows, peers)

	spin := "off (toolrl's default)"
	if f.spin {
		spin = "on (ONNX Runtime's default)"
	}
	fmt.Fprintf(w, "ONNX Runtime %s, %d CPUs, intra-op threads %d (0: ORT default), thread spinning %s; prompt %d tokens, %d new tokens per sequence, temperature 1, top-k 50\n\n",
		ort.Version(), runtime.NumCPU(), f.threads, spin, f.promptLen, f.newTokens)
	fmt.Fprintln(w, "| model | concurrency | tokens/s | Go-side overhead |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, r := range rows {
		c := strconv.Itoa(r.Concurrency)
		if r.ToolCalls {
			c += fmt.Sprintf(" + tool calls every %d–%d tokens (%.2f prefills/step)", f.toolsEvery, f.toolsEvery+3, r.PrefillsPerStep)
		}
		fmt.Fprintf(w, "| %s | %s | %.1f | %.1f%% |\n", r.Model, c, r.TokensPerSec, 100*r.Overhead)
	}
	if quantized := slices.ContainsFunc(rows, func(r benchRow) bool { return r.VsBaseline > 0 }); quantized {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Quantized weights against the float model of the same shape, same run:")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| model | quantization | concurrency | tokens/s | float model | its tokens/s | ratio |")
		fmt.Fprintln(w, "|---|---|---:|---:|---|---:|---:|")
		for _, r := range rows {
			if r.VsBaseline == 0 {
				continue
			}
			c := strconv.Itoa(r.Concurrency)
			if r.ToolCalls {
				c += " + tool calls"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.1f | %s | %.1f | %.2f× |\n", r.Model, r.Quantization, c, r.TokensPerSec, r.Baseline, r.TokensPerSec/r.VsBaseline, r.VsBaseline)
		}
	}
	if len(peers) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Peer comparison: best of %d interleaved runs each.\n\n", f.peerRepeats)
		fmt.Fprintln(w, "| model | G | toolrl tokens/s | transformers.js tokens/s | ratio | vs the float model: toolrl, transformers.js |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|")
		for _, p := range peers {
			g := strconv.Itoa(p.G)
			if p.ToolCalls {
				g += fmt.Sprintf(" + tool calls every %d–%d tokens (%d pauses, peer: %d generate() calls)", p.PauseEvery, p.PauseEvery+3, p.Pauses, p.GenerateCalls)
			}
			vs := ""
			if p.ToolrlVsFloat > 0 {
				vs = fmt.Sprintf("%.2f×, %.2f× (%s)", p.ToolrlVsFloat, p.PeerVsFloat, p.Baseline)
			}
			fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %.2f× | %s |\n", p.Model, g, p.ToolrlTPS, p.PeerTPS, p.Ratio, vs)
		}
	}
	if rss != nil {
		var chunks []string
		for _, m := range rss.ChunkRSSMiB {
			chunks = append(chunks, fmt.Sprintf("%.0f", m))
		}
		fmt.Fprintf(w, "\nRSS over %d trajectories (%s, 8-token prompts, 8 new tokens, a tool pause every 3 tokens): start %.1f MiB, end %.1f MiB, after each 1000: %s MiB (%.1f s)\n",
			rss.Trajectories, f.models[0], rss.StartRSSMiB, rss.EndRSSMiB, strings.Join(chunks, " "), rss.Seconds)
	}
	if f.jsonOut != "" {
		b, err := json.MarshalIndent(map[string]any{"throughput": rows, "peer": peers, "rss": rss}, "", "  ")
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(f.jsonOut, append(b, '\n')); err != nil {
			return fmt.Errorf("bench actor: %w", err)
		}
	}
	return nil
}

type peerResult struct {
	Generated  int     `json:"generated"`
	Pauses     int64   `json:"pauses"`         // tool-use script only
	Calls      int     `json:"generate_calls"` // tool-use script only
	Prefilled  int64   `json:"prefilled"`      // tool-use script only
	Seconds    float64 `json:"seconds"`
	TokensPerS float64 `json:"tokens_per_s"`
	ORTVersion string  `json:"ort_version"`
}

// peerTools runs the tool-use peer comparison: interleaved, best of
// --peer-repeats for each side, and checks that both sides sampled the same
// number of tokens and resumed after the same number of pauses.
func peerTools(ctx context.Context, f benchActorFlags, dir, name string) (peerRow, error) {
	var best throughputResult
	var bestPeer peerResult
	for rep := 0; rep < f.peerRepeats; rep++ {
		res, err := measureRunner(ctx, runnerWorkload{model: dir, threads: f.threads, throughputOptions: throughputOptions{
			concurrency: f.peerG, groupSize: f.peerG, promptLen: f.promptLen, newTokens: f.newTokens, jobSeed: uint64(rep),
			pauseEvery: f.toolsEvery, injectTokens: benchInjectTokens}})
		if err != nil {
			return peerRow{}, err
		}
		if rep == 0 || res.tokensPerSecond() > best.tokensPerSecond() {
			best = res
		}
		pr, err := runPeer(ctx, f, f.toolsScript, dir, strconv.Itoa(f.toolsEvery), strconv.Itoa(benchInjectTokens))
		if err != nil {
			return peerRow{}, err
		}
		if int64(pr.Generated) != res.generated || pr.Pauses != res.pauses {
			return peerRow{}, fmt.Errorf("bench actor --peer --tools-every %d: %s: the peer sampled %d tokens and resumed after %d pauses, toolrl %d and %d; the schedules differ",
				f.toolsEvery, f.toolsScript, pr.Generated, pr.Pauses, res.generated, res.pauses)
		}
		if pr.TokensPerS > bestPeer.TokensPerS {
			bestPeer = pr
		}
		fmt.Fprintf(os.Stderr, "bench actor: %s G=%d with tool calls, run %d: toolrl %.1f tokens/s, transformers.js %.1f tokens/s (%d generate() calls)\n",
			name, f.peerG, rep+1, res.tokensPerSecond(), pr.TokensPerS, pr.Calls)
	}
	return peerRow{Model: name, G: f.peerG, ToolCalls: true, ToolrlTPS: best.tokensPerSecond(), PeerTPS: bestPeer.TokensPerS,
		Ratio: best.tokensPerSecond() / bestPeer.TokensPerS, PeerORT: bestPeer.ORTVersion, ToolrlORT: ort.Version(),
		PeerSecs: bestPeer.Seconds, ToolrlSecs: best.wall.Seconds(), PauseEvery: f.toolsEvery, InjectTokens: benchInjectTokens,
		Generated: best.generated, Pauses: best.pauses, GenerateCalls: bestPeer.Calls, PeerPrefilled: bestPeer.Prefilled,
		ToolrlPrefill: best.stats.PrefillTokens}, nil
}

// runPeer runs a transformers.js script (MODEL_DIR G PROMPT_LEN NEW_TOKENS
// THREADS, then extra arguments) and parses its JSON line.
func runPeer(ctx context.Context, f benchActorFlags, script, dir string, extra ...string) (peerResult, error) {
	var pr peerResult
	if _, err := os.Stat(script); err != nil {
		return pr, fmt.Errorf("bench actor --peer: %w (run `make scripts-npm`)", err)
	}
	args := append([]string{script, dir, strconv.Itoa(f.peerG), strconv.Itoa(f.promptLen),
		strconv.Itoa(f.newTokens), strconv.Itoa(f.threads)}, extra...)
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return pr, fmt.Errorf("bench actor --peer: node %s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &pr); err != nil || pr.TokensPerS <= 0 {
		return pr, fmt.Errorf("bench actor --peer: unexpected output %q: %v", out, err)
	}
	return pr, nil
}

// rssGroup is the RSS run's group size.
const rssGroup = 8

// rssRun generates n short trajectories (groups of 8; 8-token prompts, 8
// sampled tokens, a call every 3 sampled tokens answered by 2 injected
// tokens) in one rollout run of the orchestrator's runner, after 256
// warm-up trajectories, and reports the process's RSS after the warm-up,
// after each 1000 trajectories and at the end.
func rssRun(ctx context.Context, dir string, threads, n int) (*rssReport, error) {
	rep := &rssReport{Trajectories: n}
	var start time.Time
	done := 0
	_, err := measureRunner(ctx, runnerWorkload{model: dir, threads: threads,
		throughputOptions: throughputOptions{concurrency: 64, sequences: n, groupSize: rssGroup, promptLen: 8, newTokens: 8, injectTokens: 2},
		interval:          func(int) int { return 3 },
		warmupGroups:      256 / rssGroup,
		onWarm: func() { // warm-up: buffers reach their working size
			runtime.GC()
			rep.StartRSSMiB = rssMiB()
			start = time.Now()
		},
		onGroup: func(g *traj.Group) {
			before := done / 1000
			done += len(g.Trajectories)
			if done/1000 > before || done == n {
				rep.ChunkRSSMiB = append(rep.ChunkRSSMiB, rssMiB())
			}
		},
	})
	if err != nil {
		return nil, err
	}
	runtime.GC()
	rep.EndRSSMiB = rssMiB()
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// rssMiB reads VmRSS from /proc/self/status (0 where unavailable).
func rssMiB() float64 {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
