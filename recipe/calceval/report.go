package calceval

import (
	"fmt"
	"io"

	"github.com/toolrl/toolrl/trainer"
	"github.com/toolrl/toolrl/traj"
)

// WriteReport prints what Run returned for a person, as toolrl model eval
// does: one line naming the model, the prompts, the samples, the sampling
// and the time, then WriteTable's table split by e.SplitBy.
func (e *Eval) WriteReport(w io.Writer, ev trainer.EvalMetrics, groups []traj.Group) error {
	job := &e.Job
	temperature := fmt.Sprintf("T=%g", job.Sampling.Temperature.Get())
	if job.Sampling.Temperature.Get() == 0 {
		temperature = "greedy"
	}
	fmt.Fprintf(w, "model eval: %s on %d prompts of %s, %d samples each, %s, seed %d: %.1f s\n",
		job.Model.Get(), ev.Prompts, job.Prompts.Get(), job.GroupSize.Get(), temperature, job.Seed.Get(), ev.Overall.Seconds)
	return WriteTable(w, job, ev, groups, e.SplitBy)
}
