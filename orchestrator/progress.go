package orchestrator

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress reports groups as they are written: a bar on a terminal, periodic
// log lines otherwise (CI logs, files).
type Progress interface {
	Advance(groups, trajectories, sampledTokens int)
	Finish()
}

// NewProgress picks the bar when out is a terminal. total is the number of
// groups expected, or -1 when it is not known ahead (a distributed worker):
// a spinner then, and log lines without "of".
func NewProgress(out io.Writer, total int, logger *slog.Logger) Progress {
	if f, ok := out.(*os.File); ok && isTerminal(f) {
		bar := progressbar.NewOptions(total,
			progressbar.OptionSetWriter(out),
			progressbar.OptionSetDescription("rollout"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("groups"),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		return &barProgress{bar: bar}
	}
	return &logProgress{logger: logger, total: total, every: 5 * time.Second, last: time.Now(), start: time.Now()}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

type barProgress struct{ bar *progressbar.ProgressBar }

func (p *barProgress) Advance(groups, _, _ int) { _ = p.bar.Add(groups) }
func (p *barProgress) Finish()                  { _ = p.bar.Finish() }

type logProgress struct {
	logger              *slog.Logger
	total, groups, traj int
	tokens              int
	every               time.Duration
	last, start         time.Time
}

func (p *logProgress) Advance(groups, trajectories, sampledTokens int) {
	p.groups += groups
	p.traj += trajectories
	p.tokens += sampledTokens
	if now := time.Now(); now.Sub(p.last) >= p.every {
		p.last = now
		attrs := []any{"groups", p.groups}
		if p.total >= 0 {
			attrs = append(attrs, "of", p.total)
		}
		attrs = append(attrs, "trajectories", p.traj, "sampled_tokens_per_s", int(float64(p.tokens)/now.Sub(p.start).Seconds()))
		p.logger.Info("rollout progress", attrs...)
	}
}

func (p *logProgress) Finish() {}
