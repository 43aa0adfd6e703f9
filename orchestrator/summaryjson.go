package orchestrator

import (
	"encoding/json"
	"maps"

	"github.com/toolrl/toolrl/internal/atomicfile"
	"github.com/toolrl/toolrl/sink"
)

// SummarySchema names the layout of SummaryJSON; a change that renames or
// re-means a field gets a new version.
const SummarySchema = "toolrl.rollout_summary/v1"

// SummaryJSON is the end-of-run summary for programs (toolrl rollout
// --summary-json): the printed summary's numbers under stable names
// (docs/rollout.md lists them). Times are in seconds.
type SummaryJSON struct {
	Schema string `json:"schema"`
	Job    string `json:"job"`
	// Status is "done", "interrupted" (whole groups only were written) or
	// "failed" (Error says why).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Output is where the groups went, a Redis URL without its password.
	Output        string  `json:"output,omitempty"`
	WallSeconds   float64 `json:"wall_seconds"`
	DecodeSeconds float64 `json:"decode_seconds"`
	Sampling      string  `json:"sampling,omitempty"`

	Prompts struct {
		Read    int `json:"read"`
		Skipped int `json:"skipped"`
		Refused int `json:"refused"`
	} `json:"prompts"`
	Groups struct {
		Written    int `json:"written"`
		Resumed    int `json:"resumed"`
		Duplicate  int `json:"duplicate"`
		WithSignal int `json:"with_signal"`
	} `json:"groups"`
	Trajectories struct {
		Written  int `json:"written"`
		WithCall int `json:"with_call"`
		Correct  int `json:"correct"`
		// Finish counts them by finish reason.
		Finish map[string]int `json:"finish"`
	} `json:"trajectories"`
	// RewardMean and Accuracy are over the written trajectories (0 when
	// none).
	RewardMean float64 `json:"reward_mean"`
	Accuracy   float64 `json:"accuracy"`
	Tokens     struct {
		Sampled  int `json:"sampled"`
		Injected int `json:"injected"`
		// SampledPerSecond is over the actor's time (DecodeSeconds), as
		// printed; 0 when none.
		SampledPerSecond float64 `json:"sampled_per_second"`
	} `json:"tokens"`
	ToolCalls struct {
		Total int `json:"total"`
		// ByOutcome: "ok" or the error class; ByTool: tool, then outcome
		// (Summary.ToolCalls).
		ByOutcome map[string]int            `json:"by_outcome"`
		ByTool    map[string]map[string]int `json:"by_tool"`
	} `json:"tool_calls"`
	Policy struct {
		Version          int64   `json:"version"`
		Watching         bool    `json:"watching"`
		Reloads          int     `json:"reloads"`
		ReloadSeconds    float64 `json:"reload_seconds"`
		ReloadMaxSeconds float64 `json:"reload_max_seconds"`
		VersionsLoaded   []int64 `json:"versions_loaded"`
		VersionsRefused  []int64 `json:"versions_refused"`
	} `json:"policy"`
	// Worker is a distributed worker's feed counts; absent otherwise.
	Worker *WorkerJSON `json:"worker,omitempty"`
}

// WorkerJSON is prompt.FeedStats under stable names (SummaryJSON.Worker).
type WorkerJSON struct {
	Claimed       int `json:"claimed"`
	Reclaimed     int `json:"reclaimed"`
	Done          int `json:"done"`
	Redone        int `json:"redone"`
	Repeats       int `json:"repeats"`
	Refused       int `json:"dead_lettered_refused"`
	Corrupt       int `json:"dead_lettered_corrupt"`
	OverDelivered int `json:"dead_lettered_over_delivered"`
}

// JSON returns the summary for programs. out is the job's output (shown
// through sink.DisplayOut); runErr, when not nil, is what ended the run.
func (s *Summary) JSON(out string, runErr error) SummaryJSON {
	j := SummaryJSON{Schema: SummarySchema, Job: s.Job, Status: "done", WallSeconds: s.Wall.Seconds(),
		DecodeSeconds: s.DecodeWall.Seconds(), Sampling: s.Sampling}
	if out != "" {
		j.Output = sink.DisplayOut(out)
	}
	switch {
	case s.Interrupted:
		j.Status = "interrupted"
	case runErr != nil:
		j.Status = "failed"
	}
	if runErr != nil {
		j.Error = runErr.Error()
	}
	j.Prompts.Read, j.Prompts.Skipped, j.Prompts.Refused = s.PromptsTotal, s.PromptsSkipped, s.PromptsRefused
	j.Groups.Written, j.Groups.Resumed, j.Groups.Duplicate, j.Groups.WithSignal = s.GroupsWritten, s.GroupsResumed, s.GroupsDuplicate, s.GroupsWithSignal
	j.Trajectories.Written, j.Trajectories.WithCall, j.Trajectories.Correct = s.Trajectories, s.TrajectoriesWithCall, s.Correct
	j.Trajectories.Finish = map[string]int{}
	for reason, n := range s.Finish {
		j.Trajectories.Finish[string(reason)] = n
	}
	if s.Trajectories > 0 {
		j.RewardMean = s.RewardSum / float64(s.Trajectories)
		j.Accuracy = float64(s.Correct) / float64(s.Trajectories)
	}
	j.Tokens.Sampled, j.Tokens.Injected = s.SampledTokens, s.InjectedTokens
	if sec := s.DecodeWall.Seconds(); sec > 0 {
		j.Tokens.SampledPerSecond = float64(s.SampledTokens) / sec
	}
	j.ToolCalls.ByOutcome = maps.Clone(s.Calls)
	if j.ToolCalls.ByOutcome == nil {
		j.ToolCalls.ByOutcome = map[string]int{}
	}
	for _, n := range s.Calls {
		j.ToolCalls.Total += n
	}
	j.ToolCalls.ByTool = map[string]map[string]int{}
	for tool, byOutcome := range s.ToolCalls {
		j.ToolCalls.ByTool[tool] = maps.Clone(byOutcome)
	}
	p := &j.Policy
	p.Version, p.Watching, p.Reloads = s.PolicyVersion, s.Watching, s.Reloads
	p.ReloadSeconds, p.ReloadMaxSeconds = s.ReloadTime.Seconds(), s.ReloadMax.Seconds()
	p.VersionsLoaded = append([]int64{}, s.VersionsLoaded...)
	p.VersionsRefused = append([]int64{}, s.VersionsRefused...)
	if w := s.Worker; w != nil {
		j.Worker = &WorkerJSON{Claimed: w.Claimed, Reclaimed: w.Reclaimed, Done: w.Done, Redone: w.Redone, Repeats: w.Repeats,
			Refused: w.Refused, Corrupt: w.Corrupt, OverDelivered: w.OverDelivered}
	}
	return j
}

// WriteJSONFile writes s.JSON(out, runErr), indented, to path: to a
// temporary file in the same folder renamed over path, so that a reader
// never sees half a summary. A nil s (the run of job failed before it
// began) writes an empty summary of job with the error.
func (s *Summary) WriteJSONFile(path, job, out string, runErr error) error {
	if s == nil {
		s = NewSummary(job)
	}
	data, err := json.MarshalIndent(s.JSON(out, runErr), "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}
