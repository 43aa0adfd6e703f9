// Package orchestrator runs rollout jobs: it reads prompts, samples G
// trajectories per prompt with the actor, executes the tool calls the policy
// makes, scores staged rewards, and writes whole groups to a sink (JSONL,
// Parquet or a Redis stream), with progress, a summary, resume and clean
// shutdown.
package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/internal/strictyaml"
	"github.com/toolrl/toolrl/reward"
	"github.com/toolrl/toolrl/setting"
)

// Job is a rollout job: the one declaration of its settings. Each field is
// a setting.Value with its YAML key, its `toolrl rollout` flag, its default
// and its usage text in the tags; a job file decodes into it (LoadJob),
// flags bind to it (setting.Bind), and Normalize resolves it once, in the
// order defaults < the model folder's generation_config.json (sampling) <
// the file < the flags, each value knowing the layer that set it. Build one
// in Go with setting.Of for the values you set; docs/settings.md lists them
// all (written from these tags by `go test ./orchestrator -update`).
type Job struct {
	// ID names the job: trajectory ids are ID/prompt_id/sample_index and
	// Redis keys carry it as their hash tag.
	ID setting.Value[string] `yaml:"job" flag:"job" default:"rollout" usage:"job id: trajectory ids are JOB/prompt/sample, JOB/prompt@N/sample in --iteration N"`
	// Model is a Hugging Face model folder (config.json, tokenizer.json, onnx/model.onnx).
	Model setting.Value[string] `yaml:"model" flag:"model" usage:"model folder (config.json, tokenizer.json, onnx/model.onnx)"`
	// RefModel optionally names a reference policy; its teacher-forced
	// logprobs at the sampling temperature (1 when greedy) go into
	// ref_log_prob.
	RefModel setting.Value[string] `yaml:"ref_model" flag:"ref-model" usage:"reference model folder: its logprobs go into ref_log_prob"`
	// Prompts is a JSONL file of {id, prompt | messages, answer, meta}.
	Prompts setting.Value[string] `yaml:"prompts" flag:"prompts" usage:"prompts JSONL: {id, prompt | messages, answer, meta}"`
	// Limit caps the number of prompts read (0 = all).
	Limit setting.Value[int] `yaml:"limit" flag:"limit" default:"0" usage:"use at most N prompts (0 = all)"`
	// SkipInvalid skips malformed prompt lines (counted and reported) instead
	// of stopping the job.
	SkipInvalid setting.Value[bool] `yaml:"skip_invalid" flag:"skip-invalid" default:"false" usage:"skip malformed prompt lines (counted) instead of stopping"`
	// GroupSize is G, the samples per prompt.
	GroupSize setting.Value[int] `yaml:"group_size" flag:"group-size" default:"8" usage:"G, samples per prompt (≥ 1)"`
	// Seed is the job seed; each trajectory's RNG derives from (Seed, prompt
	// id, sample index).
	Seed setting.Value[uint64] `yaml:"seed" flag:"seed" default:"0" usage:"job seed"`
	// PolicyVersion tags every trajectory (the trainer's version of the weights).
	PolicyVersion setting.Value[int64] `yaml:"policy_version" flag:"policy-version" default:"0" usage:"policy version recorded in every trajectory"`

	// Format is how prompts become tokens: "plain" (the model folder's
	// prompt_format.json), "chat" (tokenizer_config.json's chat template), or
	// "auto" (plain when the folder ships prompt_format.json).
	Format setting.Value[string] `yaml:"format" flag:"format" default:"auto" usage:"prompt format: auto, plain or chat"`
	// SystemPrompt is prepended as a system message in chat format.
	SystemPrompt setting.Value[string] `yaml:"system_prompt" usage:"chat format: a system message prepended to every prompt"`
	// ChatTemplateKwargs are extra variables for the chat template, as
	// apply_chat_template's chat_template_kwargs (e.g. enable_thinking:
	// false for Qwen3); a mapping of any JSON values, in the order written.
	// Part of the run's settings record. Chat format only. The flag
	// --chat-template-kwargs (a JSON object) replaces it.
	ChatTemplateKwargs chat.Kwargs `yaml:"chat_template_kwargs"`

	// Sampling holds the job's decoding settings; Normalize resolves them
	// and Decoding returns what the sampler runs with.
	Sampling SamplingSpec `yaml:"sampling"`

	// Tools is a tools registry file; default: the model folder's tools.yaml
	// when it ships one.
	Tools setting.Value[string] `yaml:"tools" flag:"tools" usage:"tools registry file (default: the model folder's tools.yaml)"`
	// ToolCallFormat is "bracket" ([CALC: 1+2]) or "hermes"
	// (<tool_call>{...}</tool_call>) for the plain format. Default:
	// prompt_format.json's. In chat format the chat template decides the
	// form (hermes, llama3_json, mistral); a different value is refused.
	ToolCallFormat setting.Value[string] `yaml:"tool_call_format" usage:"plain format: bracket or hermes (default: prompt_format.json's)"`
	// ToolConcurrency caps tool calls in flight across the job.
	ToolConcurrency setting.Value[int] `yaml:"tool_concurrency" default:"64" usage:"most tool calls in flight across the job"`
	// AsyncTools lets the other sequences keep decoding while slow tools run;
	// results are injected at whichever step they come back. Off by default:
	// lockstep injection (all of a step's calls finish before the next step)
	// makes the output a pure function of the job and seed, byte for byte,
	// and costs nothing with fast tools like the calculator.
	AsyncTools setting.Value[bool] `yaml:"async_tools" default:"false" usage:"keep decoding while slow tools run (output no longer byte-reproducible)"`

	Rewards reward.Config `yaml:"rewards"`
	Limits  Limits        `yaml:"limits"`

	// Batch is the most sequences decoded together in one ORT Run.
	Batch setting.Value[int] `yaml:"batch" flag:"batch" default:"64" usage:"most sequences decoded together"`
	// Threads sets ONNX Runtime's intra-op threads (0 = ORT's default).
	Threads setting.Value[int] `yaml:"threads" flag:"threads" default:"0" usage:"ONNX Runtime intra-op threads (0 = one per core)"`
	// Provider is "cpu" or "cuda".
	Provider setting.Value[string] `yaml:"provider" flag:"provider" default:"cpu" usage:"execution provider: cpu or cuda"`

	// Out is the sink: a .jsonl or .parquet path, or a redis:// URL.
	// Default: out/JOB.jsonl.
	Out setting.Value[string] `yaml:"out" flag:"out" usage:"output: FILE.jsonl, FILE.parquet or redis://host:port/db (default out/JOB.jsonl)"`
	// Resume skips groups already present in Out. A resume whose settings
	// differ from those recorded with Out is refused
	// (sink.SettingsMismatchError); see ForceResume.
	Resume setting.Value[bool] `yaml:"resume" flag:"resume" default:"true" usage:"skip groups already in the output"`
	// ForceResume resumes Out even when its recorded settings differ from
	// this job's: the output then mixes both, and this job's settings are
	// recorded (the old ones kept in sink.Settings.Replaced).
	ForceResume setting.Value[bool] `yaml:"force_resume" flag:"force-resume" default:"false" usage:"resume even when the output was written with other settings (they mix; this run's are recorded)"`
	// RecordLatency keeps tool latencies in the output; off by default because
	// wall times make otherwise identical runs differ byte for byte.
	RecordLatency setting.Value[bool] `yaml:"record_latency" default:"false" usage:"keep tool latencies in the output (runs then differ byte for byte)"`
}

// Limits bound a trajectory.
type Limits struct {
	// MaxTurns is the most model turns (a turn ends at a tool call or EOS).
	MaxTurns setting.Value[int] `yaml:"max_turns" default:"4" usage:"most model turns (a turn ends at a tool call or EOS)"`
	// MaxToolCalls is the most tool calls per trajectory; a call past it is
	// not executed and ends the trajectory (finish reason max_tool_calls).
	// 0 means no tool calls (the first call ends the trajectory).
	MaxToolCalls setting.Value[int] `yaml:"max_tool_calls" default:"3" usage:"most tool calls per trajectory (0: none; a call past it ends the trajectory)"`
	// MaxToolCallsPerTurn is the most calls executed in one assistant turn
	// (chat formats answer a turn's calls together; calls past it are not
	// run and fail as over_cap). A chat template that renders at most one
	// call per turn (Llama-3.1 JSON) lowers it to 1.
	MaxToolCallsPerTurn setting.Value[int] `yaml:"max_tool_calls_per_turn" default:"8" usage:"most calls run in one assistant turn (past it: over_cap)"`
	// MaxTokens caps the whole response (sampled + injected).
	MaxTokens setting.Value[int] `yaml:"max_tokens" default:"512" usage:"most response tokens, sampled and injected"`
}

// LoadJob reads a YAML job file strictly: an unknown key is an error naming
// the file and line, because a misspelt key would otherwise silently mean
// "default". Relative paths in it are relative to the file.
func LoadJob(path string) (Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Job{}, fmt.Errorf("read job file: %w", err)
	}
	var job Job
	if err := strictyaml.Decode(data, &job); err != nil {
		return Job{}, fmt.Errorf("job file %s: %w", path, err)
	}
	job.ResolvePaths(filepath.Dir(path))
	return job, nil
}

// ResolvePaths makes the job's relative file paths (model, ref_model,
// prompts, tools, a file out) relative to base, the folder of the file that
// gave them.
func (j *Job) ResolvePaths(base string) {
	for _, p := range []*setting.Value[string]{&j.Model, &j.RefModel, &j.Prompts, &j.Tools} {
		if v := p.Get(); v != "" && !filepath.IsAbs(v) {
			p.Set(filepath.Join(base, v), p.Source())
		}
	}
	if v := j.Out.Get(); v != "" && !strings.Contains(v, "://") && !filepath.IsAbs(v) {
		j.Out.Set(filepath.Join(base, v), j.Out.Source())
	}
}

var jobIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Normalize resolves the job once: the sampling against the model folder's
// generation_config.json, then every unset setting to its default; and
// checks every value, naming the key at fault. A second call keeps the
// resolved values.
func (j *Job) Normalize() error {
	if err := j.resolveSampling(); err != nil {
		return err
	}
	if err := setting.ApplyDefaults(j); err != nil {
		return err
	}
	if !j.Out.IsSet() {
		j.Out.Set(filepath.Join("out", j.ID.Get()+".jsonl"), setting.Default)
	}
	if !jobIDPattern.MatchString(j.ID.Get()) {
		return fmt.Errorf("job: %q may hold only letters, digits, '.', '_' and '-' (it becomes a Redis hash tag and a trajectory id prefix)", j.ID.Get())
	}
	if j.Model.Get() == "" {
		return errors.New("model: no model folder given (job file `model:` or --model)")
	}
	if j.Prompts.Get() == "" {
		return errors.New("prompts: no prompts file given (job file `prompts:` or --prompts)")
	}
	for _, c := range []struct {
		key      string
		v, least int
		note     string
	}{
		{"group_size", j.GroupSize.Get(), 1, ""},
		{"limit", j.Limit.Get(), 0, " (0: all prompts)"},
		{"batch", j.Batch.Get(), 1, ""},
		{"tool_concurrency", j.ToolConcurrency.Get(), 1, ""},
		{"threads", j.Threads.Get(), 0, " (0: one per core)"},
		{"limits.max_turns", j.Limits.MaxTurns.Get(), 1, ""},
		{"limits.max_tool_calls", j.Limits.MaxToolCalls.Get(), 0, " (0: no tool calls)"},
		{"limits.max_tool_calls_per_turn", j.Limits.MaxToolCallsPerTurn.Get(), 1, ""},
		{"limits.max_tokens", j.Limits.MaxTokens.Get(), 1, ""},
	} {
		if c.v < c.least {
			return fmt.Errorf("%s: %d, want ≥ %d%s", setting.Name(j, c.key), c.v, c.least, c.note)
		}
	}
	if v := j.PolicyVersion.Get(); v < 0 {
		return fmt.Errorf("%s: %d, want ≥ 0", setting.Name(j, "policy_version"), v)
	}
	switch j.Format.Get() {
	case "auto", "plain", "chat":
	default:
		return fmt.Errorf("%s: %q, want auto, plain or chat", setting.Name(j, "format"), j.Format.Get())
	}
	switch j.ToolCallFormat.Get() {
	case "", "bracket", "hermes":
	default:
		return fmt.Errorf("tool_call_format: %q, want bracket or hermes", j.ToolCallFormat.Get())
	}
	return j.Rewards.Normalize()
}
