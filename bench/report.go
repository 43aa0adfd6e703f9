package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/toolrl/toolrl/internal/atomicfile"
	"github.com/toolrl/toolrl/internal/ort"
)

// WriteTables writes the report as BENCHMARKS.md shows it: a line naming
// ONNX Runtime, the CPUs and the settings, then Markdown tables of the
// plain and tool-use rows, of the quantized rows against their float
// baselines (when there are any), of the peer comparison (with --peer), and
// a line for the RSS run (with --rss).
func (rep *ActorReport) WriteTables(w io.Writer) {
	o := rep.Options
	spin := "off (toolrl's default)"
	if o.Spin {
		spin = "on (ONNX Runtime's default)"
	}
	fmt.Fprintf(w, "ONNX Runtime %s, %d CPUs, intra-op threads %d (0: ORT default), thread spinning %s; prompt %d tokens, %d new tokens per sequence, temperature 1, top-k 50\n\n",
		ort.Version(), runtime.NumCPU(), o.Threads, spin, o.PromptLen, o.NewTokens)
	fmt.Fprintln(w, "| model | concurrency | tokens/s | Go-side overhead |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, r := range rep.Throughput {
		c := strconv.Itoa(r.Concurrency)
		if r.ToolCalls {
			c += fmt.Sprintf(" + tool calls every %d–%d tokens (%.2f prefills/step)", o.ToolsEvery, o.ToolsEvery+3, r.PrefillsPerStep)
		}
		fmt.Fprintf(w, "| %s | %s | %.1f | %.1f%% |\n", r.Model, c, r.TokensPerSec, 100*r.Overhead)
	}
	if quantized := slices.ContainsFunc(rep.Throughput, func(r ThroughputRow) bool { return r.VsBaseline > 0 }); quantized {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Quantized weights against the float model of the same shape, same run:")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| model | quantization | concurrency | tokens/s | float model | its tokens/s | ratio |")
		fmt.Fprintln(w, "|---|---|---:|---:|---|---:|---:|")
		for _, r := range rep.Throughput {
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
	if len(rep.Peer) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Peer comparison: best of %d interleaved runs each.\n\n", o.PeerRepeats)
		fmt.Fprintln(w, "| model | G | toolrl tokens/s | transformers.js tokens/s | ratio | vs the float model: toolrl, transformers.js |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|")
		for _, p := range rep.Peer {
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
	if rss := rep.RSS; rss != nil {
		var chunks []string
		for _, m := range rss.ChunkRSSMiB {
			chunks = append(chunks, fmt.Sprintf("%.0f", m))
		}
		fmt.Fprintf(w, "\nRSS over %d trajectories (%s, 8-token prompts, 8 new tokens, a tool pause every 3 tokens): start %.1f MiB, end %.1f MiB, after each 1000: %s MiB (%.1f s)\n",
			rss.Trajectories, o.Models[0], rss.StartRSSMiB, rss.EndRSSMiB, strings.Join(chunks, " "), rss.Seconds)
	}
}

// WriteJSONFile writes the report's JSON, indented, to path (atomically).
func (rep *ActorReport) WriteJSONFile(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("bench actor: %w", err)
	}
	return nil
}
