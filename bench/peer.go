package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/toolrl/toolrl/internal/ort"
)

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
func peerTools(ctx context.Context, o ActorOptions, dir, name string) (PeerRow, error) {
	var best throughputResult
	var bestPeer peerResult
	for rep := 0; rep < o.PeerRepeats; rep++ {
		res, err := measureRunner(ctx, runnerWorkload{model: dir, threads: o.Threads, throughputOptions: throughputOptions{
			concurrency: o.PeerG, groupSize: o.PeerG, promptLen: o.PromptLen, newTokens: o.NewTokens, jobSeed: uint64(rep),
			pauseEvery: o.ToolsEvery, injectTokens: benchInjectTokens}})
		if err != nil {
			return PeerRow{}, err
		}
		if rep == 0 || res.tokensPerSecond() > best.tokensPerSecond() {
			best = res
		}
		pr, err := runPeer(ctx, o, o.PeerToolsScript, dir, strconv.Itoa(o.ToolsEvery), strconv.Itoa(benchInjectTokens))
		if err != nil {
			return PeerRow{}, err
		}
		if int64(pr.Generated) != res.generated || pr.Pauses != res.pauses {
			return PeerRow{}, fmt.Errorf("bench actor --peer --tools-every %d: %s: the peer sampled %d tokens and resumed after %d pauses, toolrl %d and %d; the schedules differ",
				o.ToolsEvery, o.PeerToolsScript, pr.Generated, pr.Pauses, res.generated, res.pauses)
		}
		if pr.TokensPerS > bestPeer.TokensPerS {
			bestPeer = pr
		}
		fmt.Fprintf(o.Progress, "bench actor: %s G=%d with tool calls, run %d: toolrl %.1f tokens/s, transformers.js %.1f tokens/s (%d generate() calls)\n",
			name, o.PeerG, rep+1, res.tokensPerSecond(), pr.TokensPerS, pr.Calls)
	}
	return PeerRow{Model: name, G: o.PeerG, ToolCalls: true, ToolrlTPS: best.tokensPerSecond(), PeerTPS: bestPeer.TokensPerS,
		Ratio: best.tokensPerSecond() / bestPeer.TokensPerS, PeerORT: bestPeer.ORTVersion, ToolrlORT: ort.Version(),
		PeerSecs: bestPeer.Seconds, ToolrlSecs: best.wall.Seconds(), PauseEvery: o.ToolsEvery, InjectTokens: benchInjectTokens,
		Generated: best.generated, Pauses: best.pauses, GenerateCalls: bestPeer.Calls, PeerPrefilled: bestPeer.Prefilled,
		ToolrlPrefill: best.stats.PrefillTokens}, nil
}

// runPeer runs a transformers.js script (MODEL_DIR G PROMPT_LEN NEW_TOKENS
// THREADS, then extra arguments) and parses its JSON line.
func runPeer(ctx context.Context, o ActorOptions, script, dir string, extra ...string) (peerResult, error) {
	var pr peerResult
	if _, err := os.Stat(script); err != nil {
		return pr, fmt.Errorf("bench actor --peer: %w (run `make scripts-npm`)", err)
	}
	args := append([]string{script, dir, strconv.Itoa(o.PeerG), strconv.Itoa(o.PromptLen),
		strconv.Itoa(o.NewTokens), strconv.Itoa(o.Threads)}, extra...)
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Stderr = o.Progress
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
