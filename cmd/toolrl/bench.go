package main

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/bench"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks (actor throughput against peers)",
	}
	cmd.AddCommand(newBenchActorCmd())
	return cmd
}

// benchActorFlags are bench actor's flags: the measurement's options and
// the two flags that are not options (the concurrencies as typed, the JSON
// file).
type benchActorFlags struct {
	bench.ActorOptions
	concurrency string
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
			return runBenchActor(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.Models, "model", nil, "model folder (repeatable)")
	fl.StringVar(&f.concurrency, "concurrency", "1,4,16,64", "comma-separated concurrencies")
	fl.IntVar(&f.PromptLen, "prompt-len", 32, "prompt tokens (≥ 1)")
	fl.IntVar(&f.NewTokens, "new-tokens", 64, "tokens generated per sequence (≥ 1)")
	fl.IntVar(&f.Threads, "threads", 0, "ONNX Runtime intra-op threads for toolrl and the peer (0: ORT default)")
	fl.BoolVar(&f.Peer, "peer", false, "also run the transformers.js peer at G=--peer-g")
	fl.BoolVar(&f.Spin, "spin", false, "let ONNX Runtime's threads spin (ORT's default; toolrl turns spinning off)")
	fl.StringToStringVar(&f.SessionConfig, "ort-config", nil, "ONNX Runtime session configuration entries KEY=VALUE for the plain rows (repeatable), e.g. session.force_spinning_stop=1")
	fl.StringVar(&f.PeerScript, "peer-script", "scripts/actor/peer.mjs", "the peer benchmark script")
	fl.StringVar(&f.PeerToolsScript, "peer-tools-script", "scripts/actor/peer_tools.mjs", "the peer's tool-use benchmark script (with --tools-every)")
	fl.IntVar(&f.PeerG, "peer-g", 8, "group size of the peer comparison (≥ 1)")
	fl.IntVar(&f.PeerRepeats, "peer-repeats", 3, "interleaved runs of each side in the peer comparison (best of; ≥ 1)")
	fl.IntVar(&f.ToolsEvery, "tools-every", 0, "also measure the highest concurrency (and, with --peer, the peer at G) with a simulated tool call every N..N+3 tokens (6 injected tokens each), through the rollout runner (0: off)")
	fl.IntVar(&f.RSSTrajectories, "rss", 0, "run this many short trajectories (a multiple of 8) through the rollout runner on the first model and report RSS (0: off)")
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
		{"--prompt-len", f.PromptLen, false, ""},
		{"--new-tokens", f.NewTokens, false, ""},
		{"--peer-g", f.PeerG, false, ""},
		{"--peer-repeats", f.PeerRepeats, false, ""},
		{"--threads", f.Threads, true, "ONNX Runtime's default"},
		{"--tools-every", f.ToolsEvery, true, "no tool-use rows"},
		{"--rss", f.RSSTrajectories, true, "no RSS run"},
	} {
		switch {
		case c.zeroOK && c.value < 0:
			return usageErrorf("bench actor: %s %d: want ≥ 0 (0: %s)", c.name, c.value, c.zeroMean)
		case !c.zeroOK && c.value < 1:
			return usageErrorf("bench actor: %s %d: want ≥ 1", c.name, c.value)
		}
	}
	if f.RSSTrajectories%bench.RSSGroupSize != 0 {
		return usageErrorf("bench actor: --rss %d: want a multiple of %d (the run samples groups of %d)", f.RSSTrajectories, bench.RSSGroupSize, bench.RSSGroupSize)
	}
	return nil
}

// runBenchActor checks the flags, runs the measurement (progress on
// stderr), prints its tables and, with --json, writes its JSON.
func runBenchActor(cmd *cobra.Command, f benchActorFlags) error {
	if len(f.Models) == 0 {
		return usageErrorf("bench actor: --model is required")
	}
	if err := f.check(); err != nil {
		return err
	}
	for _, s := range strings.Split(f.concurrency, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c <= 0 {
			return usageErrorf("bench actor: --concurrency %q: want positive integers", f.concurrency)
		}
		f.Concurrencies = append(f.Concurrencies, c)
	}
	f.Progress = cmd.ErrOrStderr()
	rep, err := bench.MeasureActor(cmd.Context(), f.ActorOptions)
	if err != nil {
		return err
	}
	rep.WriteTables(cmd.OutOrStdout())
	if f.jsonOut != "" {
		return rep.WriteJSONFile(f.jsonOut)
	}
	return nil
}
