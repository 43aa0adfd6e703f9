package bench

import (
	"context"
	"runtime"
	"time"

	"github.com/toolrl/toolrl/internal/procmem"
	"github.com/toolrl/toolrl/traj"
)

// RSSReport is the resident memory of the RSS run: short trajectories
// through the rollout runner, measured after a warm-up.
type RSSReport struct {
	Trajectories int     `json:"trajectories"`
	StartRSSMiB  float64 `json:"start_rss_mib"`
	EndRSSMiB    float64 `json:"end_rss_mib"`
	// ChunkRSSMiB is the RSS after each chunk of 1000 trajectories.
	ChunkRSSMiB []float64 `json:"chunk_rss_mib"`
	Seconds     float64   `json:"seconds"`
}

// RSSGroupSize is the RSS run's group size: ActorOptions.RSSTrajectories
// must be a multiple of it.
const RSSGroupSize = 8

// rssRun generates n short trajectories (groups of 8; 8-token prompts, 8
// sampled tokens, a call every 3 sampled tokens answered by 2 injected
// tokens) in one rollout run of the orchestrator's runner, after 256
// warm-up trajectories, and reports the process's RSS after the warm-up,
// after each 1000 trajectories and at the end.
func rssRun(ctx context.Context, dir string, threads, n int) (*RSSReport, error) {
	rep := &RSSReport{Trajectories: n}
	var start time.Time
	done := 0
	_, err := measureRunner(ctx, runnerWorkload{model: dir, threads: threads,
		throughputOptions: throughputOptions{concurrency: 64, sequences: n, groupSize: RSSGroupSize, promptLen: 8, newTokens: 8, injectTokens: 2},
		interval:          func(int) int { return 3 },
		warmupGroups:      256 / RSSGroupSize,
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

// rssMiB is the resident set now, in MiB (0 where unavailable).
func rssMiB() float64 { return float64(procmem.Resident()) / (1 << 20) }
