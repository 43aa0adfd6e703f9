package orchestrator

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/toolrl/toolrl/actor"
)

// Where a job's sampling setting came from (Job.SamplingSources), in the
// order of precedence: a flag beats the job file, which beats the model
// folder's generation_config.json, which beats toolrl's default.
const (
	SourceFlag    = "flag"
	SourceJob     = "job"
	SourceModel   = "generation_config.json"
	SourceDefault = "default"
)

// DefaultSampling holds the settings of a job that neither it nor the model
// folder sets: temperature 1, every token kept (top_k 0, top_p 1, min_p 0),
// 256 tokens per model turn, no stop strings.
var DefaultSampling = Sampling{Temperature: 1, TopP: 1, MaxNewTokens: 256}

// samplingKeys are the job-file keys of Sampling that are resolved, in the
// order the summary reports them.
var samplingKeys = []string{"temperature", "top_k", "top_p", "min_p", "max_new_tokens", "stop"}

// MarkSampling records, before Normalize, that the job gives the sampling
// key (temperature, top_k, ...) from source (SourceFlag, SourceJob), also
// when its value is zero: the CLI marks the keys its flags set.
func (j *Job) MarkSampling(key, source string) {
	if j.SamplingSources == nil {
		j.SamplingSources = map[string]string{}
	}
	j.SamplingSources[key] = source
}

// samplingGiven reports whether s sets key: a non-zero value (Greedy for
// temperature), or a key marked in marked.
func samplingGiven(s Sampling, key string, marked map[string]string) bool {
	if marked[key] != "" {
		return true
	}
	switch key {
	case "temperature":
		return s.Greedy || s.Temperature != 0
	case "top_k":
		return s.TopK != 0
	case "top_p":
		return s.TopP != 0
	case "min_p":
		return s.MinP != 0
	case "max_new_tokens":
		return s.MaxNewTokens != 0
	case "stop":
		return len(s.StopStrings) > 0
	}
	return false
}

// copySamplingKey copies key's setting from src into dst.
func copySamplingKey(dst *Sampling, src Sampling, key string) {
	switch key {
	case "temperature":
		dst.Temperature, dst.Greedy = src.Temperature, src.Greedy
		if dst.Greedy {
			dst.Temperature = 0
		}
	case "top_k":
		dst.TopK = src.TopK
	case "top_p":
		dst.TopP = src.TopP
	case "min_p":
		dst.MinP = src.MinP
	case "max_new_tokens":
		dst.MaxNewTokens = src.MaxNewTokens
	case "stop":
		dst.StopStrings = append([]string(nil), src.StopStrings...)
	}
}

// ResolveSampling returns the sampling a job runs with, given the job's own
// settings (flags already applied; marked names keys it gives with a zero
// value or from a flag, see Job.SamplingSources) and the model folder's
// (actor.ReadGenerationConfig): each key is taken from the job when it sets
// it, else from the model folder when it does, else from DefaultSampling. A
// greedy result has Temperature 0 and Greedy set. The sources map gives each
// key's origin. Fields that are not job keys (MaxSampledTokens,
// MaxResponseTokens, EOS) are the job's.
func ResolveSampling(job Sampling, marked map[string]string, model Sampling) (Sampling, map[string]string) {
	out := job
	sources := map[string]string{}
	for _, key := range samplingKeys {
		switch {
		case samplingGiven(job, key, marked):
			copySamplingKey(&out, job, key)
			sources[key] = SourceJob
			if marked[key] != "" {
				sources[key] = marked[key]
			}
		case samplingGiven(model, key, nil):
			copySamplingKey(&out, model, key)
			sources[key] = SourceModel
		default:
			copySamplingKey(&out, DefaultSampling, key)
			sources[key] = SourceDefault
		}
	}
	return out, sources
}

// resolveSampling checks the job's sampling and resolves it against the
// model folder's generation_config.json and the defaults (once: a second
// Normalize keeps the result).
func (j *Job) resolveSampling() error {
	if err := j.Sampling.Validate(); err != nil {
		return err
	}
	if j.samplingResolved {
		return nil
	}
	model, err := actor.ReadGenerationConfig(j.Model)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	marked := maps.Clone(j.SamplingSources)
	j.Sampling, j.SamplingSources = ResolveSampling(j.Sampling, marked, model)
	if err := j.Sampling.Validate(); err != nil {
		return fmt.Errorf("resolved sampling (%s): %w", j.SamplingReport(), err)
	}
	j.samplingResolved = true
	return nil
}

// SamplingReport describes the job's sampling settings with their sources,
// e.g. "temperature 0.7 (generation_config.json), top_k 0 (default), ...";
// meaningful after Normalize. Stop strings are listed only when set.
func (j *Job) SamplingReport() string {
	s := j.Sampling
	var parts []string
	for _, key := range samplingKeys {
		var v string
		switch key {
		case "temperature":
			v = strconv.FormatFloat(s.Temperature, 'g', -1, 64)
			if s.Greedy || s.Temperature == 0 {
				v = "0 (greedy)"
			}
		case "top_k":
			v = strconv.Itoa(s.TopK)
		case "top_p":
			v = strconv.FormatFloat(s.TopP, 'g', -1, 64)
		case "min_p":
			v = strconv.FormatFloat(s.MinP, 'g', -1, 64)
		case "max_new_tokens":
			v = strconv.Itoa(s.MaxNewTokens)
		case "stop":
			if len(s.StopStrings) == 0 {
				continue
			}
			v = fmt.Sprintf("%q", s.StopStrings)
		}
		src := j.SamplingSources[key]
		if src == "" {
			src = "unresolved"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", key, v, src))
	}
	return strings.Join(parts, ", ")
}
