package trainer

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress shows a training run's iterations on a bar when out is a
// terminal, else as one line each with an ETA, and its evaluations as one
// line each (toolrl train's stderr). Not safe for concurrent use: Train
// calls its Options.OnIteration and OnEval from one goroutine.
type Progress struct {
	out   io.Writer
	bar   *progressbar.ProgressBar
	total int
	// done and spent count this run's iterations and their seconds, for the ETA.
	done  int
	spent float64
}

// NewProgress shows a run of total iterations on out.
func NewProgress(out io.Writer, total int) *Progress {
	p := &Progress{out: out, total: total}
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(out), progressbar.OptionShowCount(),
				progressbar.OptionSetDescription("train"), progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(20))
		}
	}
	return p
}

// Iteration shows a finished iteration (Options.OnIteration).
func (p *Progress) Iteration(m IterationMetrics) {
	desc := fmt.Sprintf("iter %d v%d→v%d reward %.3f acc %.1f%% calls %.1f%% kl %.4f", m.Iteration, m.RolloutVersion, m.PublishedVersion,
		m.Rollout.RewardMean, 100*m.Rollout.Accuracy, 100*m.Rollout.CallRate, m.Learner.KL)
	if p.bar != nil {
		p.bar.Describe(desc)
		_ = p.bar.Add(1)
		return
	}
	p.done++
	p.spent += m.Seconds.Total
	eta := time.Duration(p.spent / float64(p.done) * float64(p.total-m.Iteration) * float64(time.Second))
	fmt.Fprintf(p.out, "train: %s (%d/%d) rollout %.1fs learn %.1fs eval %.1fs, ETA %s\n", desc, m.Iteration, p.total,
		m.Seconds.Rollout, m.Seconds.Learn, m.Seconds.Eval, eta.Round(time.Second))
}

func (p *Progress) println(line string) {
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintln(p.out, "train: "+line)
}

// Finish ends the bar, if any.
func (p *Progress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.out)
	}
}

// Eval shows a held-out evaluation (Options.OnEval).
func (p *Progress) Eval(ev EvalMetrics) {
	line := fmt.Sprintf("eval after iteration %d (v%d): accuracy %.1f%%, call rate %.1f%%, calls/trajectory %.2f, invalid calls %.1f%%",
		ev.Iteration, ev.PolicyVersion, 100*ev.Overall.Accuracy, 100*ev.Overall.CallRate, ev.Overall.CallsPerTrajectory, 100*ev.Overall.InvalidCallRate)
	for _, field := range slices.Sorted(maps.Keys(ev.Split)) {
		values := ev.Split[field]
		for _, v := range slices.Sorted(maps.Keys(values)) {
			st := values[v]
			line += fmt.Sprintf("; %s=%s accuracy %.1f%% call rate %.1f%%", field, v, 100*st.Accuracy, 100*st.CallRate)
		}
	}
	p.println(line)
}

// Describe is the run in one line, as toolrl train prints it when it starts:
// iterations, prompts and G, how on-policy it is, where it is distributed
// (redisURL, already redacted; "" for one process) and how workers are
// started, the rollout quantization, and out.
func (c *Config) Describe(redisURL string) string {
	mode := "on-policy"
	if redisURL != "" {
		staleness := int64(0)
		if o, err := c.LearnerOptions(); err == nil {
			staleness = o.MaxStaleness
		}
		mode = fmt.Sprintf("records up to max_staleness %d versions behind", staleness)
	}
	if c.Async.Get() {
		mode = "async (one version of staleness)"
	}
	if redisURL != "" {
		job := c.Rollout.ID.Get()
		mode += fmt.Sprintf(", distributed on %s (job %s: start workers with toolrl rollout --worker --follow --watch redis --redis URL --job %s, and toolrl advantage serve --redis URL --job %s)",
			redisURL, job, job, job)
	}
	if q, _ := c.Quantization(); q.Enabled() {
		mode += fmt.Sprintf(", %s rollouts (actors sample each version's quantized copy; the learner trains float32", q)
		if redisURL != "" {
			mode += fmt.Sprintf("; start workers with --model %s", filepath.Join(c.Out.Get(), BaseQuantizedDir))
		}
		mode += ")"
	}
	return fmt.Sprintf("%d iterations × %d prompts × G=%d, %s, out %s",
		c.Iterations.Get(), c.PromptsPerIteration.Get(), c.Rollout.GroupSize.Get(), mode, c.Out.Get())
}

// Write prints the run's end-of-run summary: how it ended, the last
// iteration's and evaluation's figures, and where its files are.
func (r Result) Write(w io.Writer) {
	status := "done"
	if r.Interrupted {
		status = "interrupted (the iteration in progress was finished and published)"
	}
	fmt.Fprintf(w, "train: %s: iterations %d-%d in %s; latest policy version %d\n", status, r.FirstIteration, r.LastIteration,
		r.Elapsed.Round(time.Second), r.Version)
	if r.LastIteration >= r.FirstIteration {
		m := r.Last
		fmt.Fprintf(w, "  last iteration  reward %.3f, accuracy %.1f%%, call rate %.1f%%, calls/trajectory %.2f; learner loss %.4f, kl %.4f, clip %.3f\n",
			m.Rollout.RewardMean, 100*m.Rollout.Accuracy, 100*m.Rollout.CallRate, m.Rollout.CallsPerTrajectory,
			m.Learner.Loss, m.Learner.KL, m.Learner.ClipFracLow+m.Learner.ClipFracHigh)
		fmt.Fprintf(w, "  mismatch        mean |Δlogprob| %.2g, max %.2g, k3 %.2g (behaviour vs learner logprobs, last iteration)\n",
			m.Learner.Mismatch.MeanAbs, m.Learner.Mismatch.MaxAbs, m.Learner.Mismatch.K3)
	}
	if ev := r.LastEval; ev != nil {
		fmt.Fprintf(w, "  eval (v%d)      accuracy %.1f%%, call rate %.1f%%, calls/trajectory %.2f on %d held-out prompts\n",
			ev.PolicyVersion, 100*ev.Overall.Accuracy, 100*ev.Overall.CallRate, ev.Overall.CallsPerTrajectory, ev.Prompts)
	}
	fmt.Fprintf(w, "  metrics         %s, %s\n", filepath.Join(r.Out, MetricsFile), filepath.Join(r.Out, EvalFile))
	fmt.Fprintf(w, "  policy          %s\n", r.VersionDir)
	fmt.Fprintf(w, "  plots           toolrl plot %s\n", r.Out)
}
