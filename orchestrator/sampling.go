package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/setting"
)

// SamplingSpec is a job's `sampling:` section: the decoding settings as the
// layers give them (defaults < the model folder's generation_config.json <
// the job file < flags). Normalize resolves it once; Job.Decoding returns
// the actor.Sampling the sampler runs with. Greedy decoding is temperature
// 0, which greedy: true (--greedy, generation_config.json's do_sample:
// false) also sets.
type SamplingSpec struct {
	// Temperature divides the logits before the softmax; 0 is greedy.
	Temperature setting.Value[float64] `yaml:"temperature" flag:"temperature" default:"1" usage:"sampling temperature; 0: greedy, as --greedy"`
	// Greedy decodes greedily: temperature 0 by another name, and the one
	// that generation_config.json's do_sample: false sets.
	Greedy setting.Value[bool] `yaml:"greedy" flag:"greedy" usage:"greedy decoding (temperature 0)"`
	// TopK keeps the K most likely tokens; 0 keeps all.
	TopK setting.Value[int] `yaml:"top_k" flag:"top-k" default:"0" usage:"keep the K most likely tokens (0: all)"`
	// TopP keeps the smallest set of most likely tokens whose probability
	// reaches TopP; 1 keeps all.
	TopP setting.Value[float64] `yaml:"top_p" flag:"top-p" default:"1" usage:"nucleus: keep the most likely tokens up to this probability, in (0, 1] (1: all)"`
	// MinP keeps tokens at least MinP times as likely as the most likely; 0 keeps all.
	MinP setting.Value[float64] `yaml:"min_p" flag:"min-p" default:"0" usage:"keep tokens at least this share of the most likely one's probability, in [0, 1) (0: all)"`
	// MaxNewTokens caps the tokens sampled in one model turn (between tool
	// results), as Hugging Face's max_new_tokens caps one generate call.
	MaxNewTokens setting.Value[int] `yaml:"max_new_tokens" flag:"max-new-tokens" default:"256" usage:"most tokens sampled per model turn"`
	// Stop strings end a sequence as soon as its text ends with one of them.
	Stop setting.Value[[]string] `yaml:"stop" flag:"stop" usage:"stop string (repeat the flag for more); the token that completes it is kept"`
}

// resolveSampling checks each layer's greedy and temperature, fills the
// job's unset sampling settings from the model folder's
// generation_config.json and folds greedy into temperature 0. The defaults
// come after, with the job's others (Normalize).
func (j *Job) resolveSampling() error {
	s := &j.Sampling
	if s.Temperature.IsSet() && s.Greedy.IsSet() && s.Temperature.Source().Rank() == s.Greedy.Source().Rank() {
		// One layer gives both: they must agree.
		t, g := s.Temperature.Get(), s.Greedy.Get()
		tn, gn := setting.Name(s, "temperature"), setting.Name(s, "greedy")
		where := " (" + layerName(s.Greedy.Source()) + ")"
		if s.Greedy.Source() == setting.Flag {
			where = ""
		}
		switch {
		case g && t > 0:
			return fmt.Errorf("sampling: %s with %s %g%s; greedy decoding is temperature 0, give one of them", gn, tn, t, where)
		case !g && t == 0:
			return fmt.Errorf("sampling: %s 0 with %s false%s; temperature 0 is greedy decoding", tn, gn, where)
		}
	}
	// Greedy is temperature 0 by another name: the higher layer of the two wins.
	if s.Greedy.IsSet() && s.Greedy.Source().Rank() >= s.Temperature.Source().Rank() {
		switch {
		case s.Greedy.Get():
			s.Temperature.Set(0, s.Greedy.Source())
		case s.Temperature.IsSet() && s.Temperature.Get() == 0:
			// greedy false over a lower layer's temperature 0: that
			// temperature is overruled; the model's or the default applies.
			s.Temperature = setting.Value[float64]{}
		}
	}
	if j.Model.Get() != "" && (!s.Temperature.IsSet() || !s.TopK.IsSet() || !s.TopP.IsSet() || !s.MinP.IsSet() || !s.MaxNewTokens.IsSet()) {
		model, err := ReadGenerationConfig(j.Model.Get())
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		setting.Fill(s, &model)
	}
	// Greedy is folded into temperature 0 now; the record keeps one key.
	s.Greedy = setting.Value[bool]{}
	if err := setting.ApplyDefaults(s); err != nil {
		return err
	}
	switch {
	case s.TopP.Get() == 0:
		return fmt.Errorf("%s: 0 (%s), want in (0, 1] (1 keeps all tokens)", samplingName(s, "top_p"), layerName(s.TopP.Source()))
	case s.MaxNewTokens.Get() == 0:
		return fmt.Errorf("%s: 0 (%s), want ≥ 1 (per model turn)", samplingName(s, "max_new_tokens"), layerName(s.MaxNewTokens.Source()))
	}
	if err := j.Decoding().Validate(); err != nil {
		// actor.Sampling.Validate names the job-file key; a value that came
		// from a flag is named by its flag.
		msg := err.Error()
		if key, rest, ok := strings.Cut(msg, ":"); ok && strings.HasPrefix(key, "sampling.") {
			msg = samplingName(s, strings.TrimPrefix(key, "sampling.")) + ":" + rest
		}
		return fmt.Errorf("%s (%s)", msg, j.SamplingReport())
	}
	return nil
}

// samplingName is how an error names a sampling setting: its flag when a
// flag set it, else its job-file key (sampling.top_p).
func samplingName(s *SamplingSpec, key string) string {
	if n := setting.Name(s, key); n != key {
		return n
	}
	return "sampling." + key
}

// layerName says in an error which layer gave a value.
func layerName(src setting.Source) string {
	switch src {
	case setting.File:
		return "the file"
	case setting.Flag:
		return "the flags"
	case setting.Override:
		return "--set"
	case setting.Model:
		return "generation_config.json"
	}
	return string(src)
}

// Decoding is the sampling the job's sampler runs with: its resolved
// sampling settings, with limits.max_tokens as the response cap. Meaningful
// after Normalize.
func (j *Job) Decoding() actor.Sampling {
	s := j.Sampling
	t := s.Temperature.Get()
	return actor.Sampling{
		Temperature: t, Greedy: t == 0 && s.Temperature.IsSet(),
		TopK: s.TopK.Get(), TopP: s.TopP.Get(), MinP: s.MinP.Get(),
		MaxNewTokens: s.MaxNewTokens.Get(), StopStrings: s.Stop.Get(),
		MaxResponseTokens: j.Limits.MaxTokens.Get(),
	}
}

// SamplingReport describes the job's sampling settings with their sources,
// e.g. "temperature 0.7 (generation_config.json), top_k 0 (default), ...";
// meaningful after Normalize. Stop strings are listed only when set.
func (j *Job) SamplingReport() string {
	var parts []string
	for _, e := range setting.Entries(&j.Sampling) {
		v := e.Value
		switch {
		case e.Key == "temperature" && j.Sampling.Temperature.Get() == 0:
			v = "0 (greedy)"
		case e.Key == "stop":
			v = fmt.Sprintf("%q", j.Sampling.Stop.Get())
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", e.Key, v, e.Source))
	}
	return strings.Join(parts, ", ")
}

// ReadGenerationConfig reads the sampling settings of a model folder's
// generation_config.json, the model layer of a job's sampling: only the
// keys the file sets are set (Source setting.Model), so the rest fall
// through to toolrl's defaults, not to transformers' (top_k 50 when
// sampling). do_sample: false is greedy (the sampling keys are then
// ignored, as transformers ignores them); temperature 0 is greedy too;
// max_new_tokens is per model turn, as in generate(). A folder without the
// file sets nothing. Values out of range are an error naming the file and
// key.
func ReadGenerationConfig(dir string) (SamplingSpec, error) {
	path := filepath.Join(dir, "generation_config.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return SamplingSpec{}, nil
	}
	if err != nil {
		return SamplingSpec{}, fmt.Errorf("load policy: %w", err)
	}
	var g struct {
		DoSample     *bool    `json:"do_sample"`
		Temperature  *float64 `json:"temperature"`
		TopK         *int     `json:"top_k"`
		TopP         *float64 `json:"top_p"`
		MinP         *float64 `json:"min_p"`
		MaxNewTokens *int     `json:"max_new_tokens"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return SamplingSpec{}, fmt.Errorf("load policy: parse %s: %w", path, err)
	}
	var s SamplingSpec
	if g.MaxNewTokens != nil {
		if *g.MaxNewTokens < 1 {
			return SamplingSpec{}, fmt.Errorf("load policy: %s: max_new_tokens %d, want ≥ 1", path, *g.MaxNewTokens)
		}
		s.MaxNewTokens.Set(*g.MaxNewTokens, setting.Model)
	}
	if g.DoSample != nil && !*g.DoSample {
		s.Temperature.Set(0, setting.Model)
		return s, nil
	}
	check := actor.Sampling{TopP: 1}
	if g.Temperature != nil {
		s.Temperature.Set(*g.Temperature, setting.Model)
		check.Temperature = *g.Temperature
	}
	// A zero top_k, top_p or min_p in the file keeps all tokens, as toolrl's
	// defaults do; only the others are a setting of the model.
	if g.TopK != nil && *g.TopK != 0 {
		s.TopK.Set(*g.TopK, setting.Model)
		check.TopK = *g.TopK
	}
	if g.TopP != nil && *g.TopP != 0 {
		s.TopP.Set(*g.TopP, setting.Model)
		check.TopP = *g.TopP
	}
	if g.MinP != nil && *g.MinP != 0 {
		s.MinP.Set(*g.MinP, setting.Model)
		check.MinP = *g.MinP
	}
	if err := check.Validate(); err != nil {
		return SamplingSpec{}, fmt.Errorf("load policy: %s: %w", path, err)
	}
	return s, nil
}
