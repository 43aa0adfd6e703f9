package offline

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// BenchmarkOffline measures offline tokens/s: a JSONL file of trajectories
// (members of a group spread over a window of 64 groups) through Run to
// a JSONL file of advantage records.
func BenchmarkOffline(b *testing.B) {
	dir := b.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	tokens, err := WriteSyntheticTrajectories(in, 20000, 8, 64)
	if err != nil {
		b.Fatal(err)
	}
	cfg := advantage.DefaultConfig()
	cfg.Mode, cfg.KL = advantage.ModeHybrid, advantage.KLK3
	b.ResetTimer()
	start := time.Now()
	for iter := 0; iter < b.N; iter++ {
		src, err := export.OpenTrajectories(in)
		if err != nil {
			b.Fatal(err)
		}
		dst, err := export.CreateAdvantages(filepath.Join(dir, "out.jsonl"), export.WriterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(context.Background(), src, dst, Options{Config: cfg}); err != nil {
			b.Fatal(err)
		}
		src.Close()
		if err := dst.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tokens*int64(b.N))/time.Since(start).Seconds(), "tokens/s")
}

// WriteSyntheticTrajectories writes n trajectories (groups of g, steps of
// stepLen tokens) to path as JSONL, each group's members spread over a window
// of 64 groups so that they are not contiguous, and returns the response
// tokens written. It is exported for the test that generates big inputs.
func WriteSyntheticTrajectories(path string, n, g, stepLen int) (int64, error) {
	w, err := export.CreateTrajectories(path, export.WriterOptions{})
	if err != nil {
		return 0, err
	}
	const window = 64
	rng := rand.New(rand.NewPCG(1, 1))
	var tokens int64
	var open [][]traj.Trajectory // members of the groups in the window, not yet written
	next, written := 0, 0
	for written < n {
		for len(open) < window && next*g < n {
			open = append(open, trajtest.Synthetic("synthetic", next, g, stepLen).Trajectories)
			next++
		}
		k := rng.IntN(len(open))
		t := open[k][0]
		open[k] = open[k][1:]
		if len(open[k]) == 0 {
			open[k] = open[len(open)-1]
			open = open[:len(open)-1]
		}
		if err := w.Write(t); err != nil {
			w.Close()
			return 0, err
		}
		tokens += int64(t.ResponseLen())
		written++
	}
	return tokens, w.Close()
}

// TestWriteSyntheticTrajectories writes a big input for measuring the
// offline command's memory, only when asked:
//
//	TOOLRL_SYNTHETIC=/tmp/1m.jsonl:1000000 go test ./advantage/offline -run TestWriteSyntheticTrajectories
func TestWriteSyntheticTrajectories(t *testing.T) {
	spec := os.Getenv("TOOLRL_SYNTHETIC")
	if spec == "" {
		t.Skip("set TOOLRL_SYNTHETIC=PATH:N to write N synthetic trajectories to PATH")
	}
	path, count, ok := strings.Cut(spec, ":")
	n, err := strconv.Atoi(count)
	if !ok || err != nil {
		t.Fatalf("TOOLRL_SYNTHETIC=%q, want PATH:N", spec)
	}
	tokens, err := WriteSyntheticTrajectories(path, n, 8, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d trajectories, %d response tokens, to %s", n, tokens, path)
}
