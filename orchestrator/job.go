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

	"go.yaml.in/yaml/v3"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/internal/strictyaml"
	"github.com/toolrl/toolrl/reward"
)

// Job is a rollout job, as read from a YAML job file. Zero values mean the
// documented defaults; Normalize fills them in and checks the result.
type Job struct {
	// ID names the job: trajectory ids are ID/prompt_id/sample_index and Redis
	// keys carry it as their hash tag. Default: "rollout".
	ID string `yaml:"job"`
	// Model is a Hugging Face model folder (config.json, tokenizer.json, onnx/model.onnx).
	Model string `yaml:"model"`
	// RefModel optionally names a reference policy; its teacher-forced
	// logprobs at the sampling temperature (1 when greedy) go into
	// ref_log_prob.
	RefModel string `yaml:"ref_model"`
	// Prompts is a JSONL file of {id, prompt | messages, answer, meta}.
	Prompts string `yaml:"prompts"`
	// Limit caps the number of prompts read (0 = all).
	Limit int `yaml:"limit"`
	// SkipInvalid skips malformed prompt lines (counted and reported) instead
	// of stopping the job.
	SkipInvalid bool `yaml:"skip_invalid"`
	// GroupSize is G, the samples per prompt. Default 8.
	GroupSize int `yaml:"group_size"`
	// Seed is the job seed; each trajectory's RNG derives from (Seed, prompt
	// id, sample index).
	Seed uint64 `yaml:"seed"`
	// PolicyVersion tags every trajectory (the trainer's version of the weights).
	PolicyVersion int64 `yaml:"policy_version"`

	// Format is how prompts become tokens: "plain" (the model folder's
	// prompt_format.json), "chat" (tokenizer_config.json's chat template), or
	// "auto" (plain when the folder ships prompt_format.json). Default auto.
	Format string `yaml:"format"`
	// SystemPrompt is prepended as a system message in chat format.
	SystemPrompt string `yaml:"system_prompt"`
	// ChatTemplateKwargs are extra variables for the chat template, as
	// apply_chat_template's chat_template_kwargs (e.g. enable_thinking:
	// false for Qwen3); a mapping of any JSON values, in the order written.
	// Part of the run's settings record. Chat format only.
	ChatTemplateKwargs chat.Kwargs `yaml:"chat_template_kwargs"`

	// Sampling holds the job's decoding settings, a zero field unset until
	// Normalize resolves them (flag > job file > the model folder's
	// generation_config.json > default) and records where each came from in
	// SamplingSources.
	Sampling Sampling `yaml:"sampling"`
	// SamplingSources maps each sampling key (temperature, top_k, top_p,
	// min_p, max_new_tokens, stop) to where its value came from: SourceFlag,
	// SourceJob, SourceModel or SourceDefault. Before Normalize a caller may
	// mark keys it gives, also with a zero value (the CLI marks its flags;
	// LoadJob an explicit top_k: 0 or min_p: 0); Normalize fills the rest.
	SamplingSources map[string]string `yaml:"-"`
	// samplingResolved is set once Normalize has resolved Sampling, so a
	// second Normalize does not read a resolved zero as unset.
	samplingResolved bool

	// Tools is a tools registry file; default: the model folder's tools.yaml
	// when it ships one.
	Tools string `yaml:"tools"`
	// ToolCallFormat is "bracket" ([CALC: 1+2]) or "hermes"
	// (<tool_call>{...}</tool_call>) for the plain format. Default:
	// prompt_format.json's. In chat format the chat template decides the
	// form (hermes, llama3_json, mistral); a different value is refused.
	ToolCallFormat string `yaml:"tool_call_format"`
	// ToolConcurrency caps tool calls in flight across the job. Default 64.
	ToolConcurrency int `yaml:"tool_concurrency"`
	// AsyncTools lets the other sequences keep decoding while slow tools run;
	// results are injected at whichever step they come back. Off by default:
	// lockstep injection (all of a step's calls finish before the next step)
	// makes the output a pure function of the job and seed, byte for byte,
	// and costs nothing with fast tools like the calculator.
	AsyncTools bool `yaml:"async_tools"`

	Rewards reward.Config `yaml:"rewards"`
	Limits  Limits        `yaml:"limits"`

	// Batch is the most sequences decoded together in one ORT Run. Default 64.
	Batch int `yaml:"batch"`
	// Threads sets ONNX Runtime's intra-op threads (0 = ORT's default).
	Threads int `yaml:"threads"`
	// Provider is "cpu" (default) or "cuda".
	Provider string `yaml:"provider"`

	// Out is the sink: a .jsonl or .parquet path, or a redis:// URL.
	Out string `yaml:"out"`
	// Resume skips groups already present in Out. Default true. A resume
	// whose settings differ from those recorded with Out is refused
	// (SettingsMismatchError); see ForceResume.
	Resume *bool `yaml:"resume"`
	// ForceResume resumes Out even when its recorded settings differ from
	// this job's: the output then mixes both, and this job's settings are
	// recorded (the old ones kept in Settings.Replaced).
	ForceResume bool `yaml:"force_resume"`
	// RecordLatency keeps tool latencies in the output; off by default because
	// wall times make otherwise identical runs differ byte for byte.
	RecordLatency bool `yaml:"record_latency"`
}

// Sampling is actor.Sampling, the one sampling type: a job's `sampling:`
// section decodes into it (keys temperature, greedy, top_k, top_p, min_p,
// max_new_tokens, stop). In a Job a zero field is unset: Normalize takes it
// from generation_config.json, else from the default (see ResolveSampling);
// greedy decoding is Greedy (a job file's explicit temperature: 0 sets it).
type Sampling = actor.Sampling

// Limits bound a trajectory.
type Limits struct {
	// MaxTurns is the most model turns (a turn ends at a tool call or EOS). Default 4.
	MaxTurns int `yaml:"max_turns"`
	// MaxToolCalls is the most tool calls per trajectory; a call past it is
	// not executed and ends the trajectory (finish reason max_tool_calls).
	// Unset (nil) means the default 3; 0 means no tool calls (the first call
	// ends the trajectory). Normalize sets it.
	MaxToolCalls *int `yaml:"max_tool_calls"`
	// MaxToolCallsPerTurn is the most calls executed in one assistant turn
	// (chat formats answer a turn's calls together; calls past it are not
	// run and fail as over_cap). Default 8; a chat template that renders at
	// most one call per turn (Llama-3.1 JSON) lowers it to 1.
	MaxToolCallsPerTurn int `yaml:"max_tool_calls_per_turn"`
	// MaxTokens caps the whole response (sampled + injected). Default 512.
	MaxTokens int `yaml:"max_tokens"`
}

// DefaultMaxToolCalls is Limits.MaxToolCalls when a job leaves it unset.
const DefaultMaxToolCalls = 3

// IntPtr returns a pointer to n, for the *int fields of a Job built in code
// (Limits.MaxToolCalls).
func IntPtr(n int) *int { return &n }

// LoadJob reads a YAML job file strictly: an unknown key is an error naming
// the file and line, because a misspelt key would otherwise silently mean
// "default".
func LoadJob(path string) (Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Job{}, fmt.Errorf("read job file: %w", err)
	}
	var job Job
	if err := strictyaml.Decode(data, &job); err != nil {
		return Job{}, fmt.Errorf("job file %s: %w", path, err)
	}
	if err := checkExplicitZeros(data, &job); err != nil {
		return Job{}, fmt.Errorf("job file %s: %w", path, err)
	}
	// Relative paths in a job file are relative to the file.
	base := filepath.Dir(path)
	for _, p := range []*string{&job.Model, &job.RefModel, &job.Prompts, &job.Tools} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	if job.Out != "" && !strings.Contains(job.Out, "://") && !filepath.IsAbs(job.Out) {
		job.Out = filepath.Join(base, job.Out)
	}
	return job, nil
}

// zeroIsUnset are the job-file keys whose zero value Normalize reads as
// "unset" and replaces by the default given here. Written explicitly, 0 is
// refused (checkExplicitZeros): it would otherwise silently mean the default.
var zeroIsUnset = []struct{ key, def string }{
	{"group_size", "8"},
	{"batch", "64"},
	{"tool_concurrency", "64"},
	{"sampling.top_p", "1"},
	{"sampling.max_new_tokens", "256"},
	{"limits.max_turns", "4"},
	{"limits.max_tool_calls_per_turn", "8"},
	{"limits.max_tokens", "512"},
}

// checkExplicitZeros applies CheckJobKeys to a job file's document.
func checkExplicitZeros(data []byte, job *Job) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil // Decode already reported a malformed file; an empty one sets nothing
	}
	return CheckJobKeys(doc.Content[0], job)
}

// CheckJobKeys applies the rules on the keys a job's YAML actually sets to
// job, decoded from the mapping node m: a job file's document, or the
// rollout key of a `toolrl train` config (which must follow the same rules).
// An explicit 0 for a key whose 0 would silently mean its default is an
// error naming the key, an explicit sampling.temperature 0 means greedy (as
// documented; unset means 1), and greedy: true with a temperature > 0 is a
// contradiction. Errors name the key relative to m.
func CheckJobKeys(m *yaml.Node, job *Job) error {
	if m == nil {
		return nil
	}
	zero := func(key string) bool {
		n := lookupKey(m, strings.Split(key, "."))
		var v float64
		return n != nil && n.Tag != "!!null" && n.Decode(&v) == nil && v == 0
	}
	for _, k := range zeroIsUnset {
		if zero(k.key) {
			return fmt.Errorf("%s: 0 is not a valid value (omit the key for the default %s)", k.key, k.def)
		}
	}
	if job.Sampling.Greedy && job.Sampling.Temperature > 0 {
		return fmt.Errorf("sampling: greedy: true with temperature %g; greedy decoding is temperature 0, give one of them", job.Sampling.Temperature)
	}
	if zero("sampling.temperature") {
		if lookupKey(m, []string{"sampling", "greedy"}) != nil && !job.Sampling.Greedy {
			return errors.New("sampling: temperature 0 with greedy: false; temperature 0 is greedy decoding")
		}
		job.Sampling.Greedy = true
	}
	// An explicit top_k: 0 or min_p: 0 (keep all) is a setting, not unset: it
	// overrides generation_config.json.
	for _, k := range []string{"top_k", "min_p"} {
		if zero("sampling." + k) {
			job.MarkSampling(k, SourceJob)
		}
	}
	return nil
}

// lookupKey returns the value node at path in a YAML mapping, or nil.
func lookupKey(n *yaml.Node, path []string) *yaml.Node {
	for _, key := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

var jobIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Normalize fills defaults and checks every field, naming the one at fault.
func (j *Job) Normalize() error {
	if j.ID == "" {
		j.ID = "rollout"
	}
	if !jobIDPattern.MatchString(j.ID) {
		return fmt.Errorf("job: %q may hold only letters, digits, '.', '_' and '-' (it becomes a Redis hash tag and a trajectory id prefix)", j.ID)
	}
	if j.Model == "" {
		return errors.New("model: no model folder given (job file `model:` or --model)")
	}
	if j.Prompts == "" {
		return errors.New("prompts: no prompts file given (job file `prompts:` or --prompts)")
	}
	if j.GroupSize == 0 {
		j.GroupSize = 8
	}
	if j.GroupSize < 1 {
		return fmt.Errorf("group_size: %d, want ≥ 1", j.GroupSize)
	}
	if j.Limit < 0 {
		return fmt.Errorf("limit: %d, want ≥ 0", j.Limit)
	}
	switch j.Format {
	case "":
		j.Format = "auto"
	case "auto", "plain", "chat":
	default:
		return fmt.Errorf("format: %q, want auto, plain or chat", j.Format)
	}
	switch j.ToolCallFormat {
	case "", "bracket", "hermes":
	default:
		return fmt.Errorf("tool_call_format: %q, want bracket or hermes", j.ToolCallFormat)
	}
	if err := j.resolveSampling(); err != nil {
		return err
	}
	if j.ToolConcurrency == 0 {
		j.ToolConcurrency = 64
	}
	if j.Batch == 0 {
		j.Batch = 64
	}
	if j.Batch < 1 {
		return fmt.Errorf("batch: %d, want ≥ 1", j.Batch)
	}
	if j.ToolConcurrency < 1 {
		return fmt.Errorf("tool_concurrency: %d, want ≥ 1", j.ToolConcurrency)
	}
	if j.Threads < 0 {
		return fmt.Errorf("threads: %d, want ≥ 0 (0: one per core)", j.Threads)
	}
	if j.PolicyVersion < 0 {
		return fmt.Errorf("policy_version: %d, want ≥ 0", j.PolicyVersion)
	}
	if j.Provider == "" {
		j.Provider = "cpu"
	}
	l := &j.Limits
	if l.MaxTurns == 0 {
		l.MaxTurns = 4
	}
	if l.MaxToolCalls == nil {
		l.MaxToolCalls = IntPtr(DefaultMaxToolCalls)
	}
	if *l.MaxToolCalls < 0 {
		return fmt.Errorf("limits.max_tool_calls: %d, want ≥ 0 (0: no tool calls; omit the key for the default %d)", *l.MaxToolCalls, DefaultMaxToolCalls)
	}
	if l.MaxToolCallsPerTurn == 0 {
		l.MaxToolCallsPerTurn = 8
	}
	if l.MaxTokens == 0 {
		l.MaxTokens = 512
	}
	if l.MaxTurns < 1 || l.MaxTokens < 1 || l.MaxToolCallsPerTurn < 1 {
		return fmt.Errorf("limits: max_turns %d, max_tool_calls_per_turn %d, max_tokens %d: want positive values", l.MaxTurns, l.MaxToolCallsPerTurn, l.MaxTokens)
	}
	if j.Out == "" {
		j.Out = filepath.Join("out", j.ID+".jsonl")
	}
	if j.Resume == nil {
		yes := true
		j.Resume = &yes
	}
	return j.Rewards.Normalize()
}
