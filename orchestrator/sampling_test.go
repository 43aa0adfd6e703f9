package orchestrator

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/tinymodel"
)

// TestResolveSamplingPrecedence: each key comes from the job (a flag marked
// as such) when it sets it, else from generation_config.json, else from the
// default; an explicit zero the job marks beats the model folder.
func TestResolveSamplingPrecedence(t *testing.T) {
	model := Sampling{Temperature: 0.5, TopK: 20, MaxNewTokens: 64}
	for _, c := range []struct {
		name    string
		job     Sampling
		marked  map[string]string
		want    Sampling
		sources map[string]string
	}{
		{"model over default", Sampling{}, nil, Sampling{Temperature: 0.5, TopK: 20, TopP: 1, MaxNewTokens: 64},
			map[string]string{"temperature": SourceModel, "top_k": SourceModel, "top_p": SourceDefault, "max_new_tokens": SourceModel}},
		{"job over model", Sampling{Temperature: 0.7, MaxNewTokens: 32}, nil, Sampling{Temperature: 0.7, TopK: 20, TopP: 1, MaxNewTokens: 32},
			map[string]string{"temperature": SourceJob, "max_new_tokens": SourceJob}},
		{"flag over model", Sampling{Temperature: 0.9}, map[string]string{"temperature": SourceFlag}, Sampling{Temperature: 0.9, TopK: 20, TopP: 1, MaxNewTokens: 64},
			map[string]string{"temperature": SourceFlag}},
		{"explicit top_k 0", Sampling{}, map[string]string{"top_k": SourceJob}, Sampling{Temperature: 0.5, TopP: 1, MaxNewTokens: 64},
			map[string]string{"top_k": SourceJob}},
		{"greedy job", Sampling{Greedy: true, Temperature: 0.7}, nil, Sampling{Greedy: true, TopK: 20, TopP: 1, MaxNewTokens: 64},
			map[string]string{"temperature": SourceJob}},
	} {
		got, sources := ResolveSampling(c.job, c.marked, model)
		if got.Temperature != c.want.Temperature || got.Greedy != c.want.Greedy || got.TopK != c.want.TopK ||
			got.TopP != c.want.TopP || got.MinP != c.want.MinP || got.MaxNewTokens != c.want.MaxNewTokens {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		for k, v := range c.sources {
			if sources[k] != v {
				t.Errorf("%s: %s from %q, want %q", c.name, k, sources[k], v)
			}
		}
	}
	// do_sample: false in the model folder: greedy unless the job says otherwise.
	got, sources := ResolveSampling(Sampling{}, nil, Sampling{Greedy: true})
	if !got.Greedy || got.Temperature != 0 || sources["temperature"] != SourceModel {
		t.Errorf("model greedy: %+v from %s, want greedy from %s", got, sources["temperature"], SourceModel)
	}
}

// TestJobFileSamplingKeys: a job file's explicit top_k: 0 is a setting (it
// overrides the model folder's top_k), and the job's sampling is checked by
// actor.Sampling.Validate with errors that name the key.
func TestJobFileSamplingKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		path := filepath.Join(dir, "job.yaml")
		if err := os.WriteFile(path, []byte("model: m\nprompts: p.jsonl\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	job, err := LoadJob(write("sampling:\n  top_k: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if job.SamplingSources["top_k"] != SourceJob {
		t.Errorf("top_k: 0 not marked as given: %v", job.SamplingSources)
	}
	for body, key := range map[string]string{
		"sampling:\n  temperature: -1\n":    "sampling.temperature",
		"sampling:\n  top_k: -3\n":          "sampling.top_k",
		"sampling:\n  top_p: 1.5\n":         "sampling.top_p",
		"sampling:\n  min_p: 1\n":           "sampling.min_p",
		"sampling:\n  max_new_tokens: -1\n": "sampling.max_new_tokens",
		"sampling:\n  stop: [\"\"]\n":       "sampling.stop",
	} {
		job, err := LoadJob(write(body))
		if err == nil {
			err = job.Normalize()
		}
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: error %v, want one naming %s", body, err, key)
		}
	}
}

// TestRolloutSamplingFromGenerationConfig: a model folder whose
// generation_config.json sets temperature 0.5 samples at 0.5 when the job
// says nothing (the trajectories record 0.5, the summary names the file); a
// job key overrides it, a flag (marked by the CLI) overrides both, and
// do_sample: false is greedy.
func TestRolloutSamplingFromGenerationConfig(t *testing.T) {
	model := tinyPolicy(t)
	tinymodel.SetGenerationConfig(t, model, map[string]any{"do_sample": true, "temperature": 0.5})
	greedyModel := tinyPolicy(t)
	tinymodel.SetGenerationConfig(t, greedyModel, map[string]any{"do_sample": false, "temperature": 0.5})
	prompts := writePrompts(t, 2)
	for _, c := range []struct {
		name, model string
		edit        func(*Job)
		want        float64
		report      string
	}{
		{"model folder", model, func(*Job) {}, 0.5, "temperature 0.5 (generation_config.json)"},
		{"job key", model, func(j *Job) { j.Sampling.Temperature = 0.7 }, 0.7, "temperature 0.7 (job)"},
		{"flag", model, func(j *Job) { j.Sampling.Temperature = 0.9; j.MarkSampling("temperature", SourceFlag) }, 0.9, "temperature 0.9 (flag)"},
		{"do_sample false", greedyModel, func(*Job) {}, 0, "temperature 0 (greedy) (generation_config.json)"},
		{"job over do_sample false", greedyModel, func(j *Job) { j.Sampling.Temperature = 0.7 }, 0.7, "temperature 0.7 (job)"},
	} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		job := tinyJob(c.model, prompts, out)
		job.Sampling = Sampling{MaxNewTokens: 8}
		c.edit(&job)
		sum, err := quietRun(t, context.Background(), job, RunOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ts := readTrajectories(t, out)
		if len(ts) != 8 {
			t.Fatalf("%s: %d trajectories, want 8", c.name, len(ts))
		}
		for _, tr := range ts {
			if tr.Temperature == nil || *tr.Temperature != c.want {
				t.Errorf("%s %s: temperature %v, want %g", c.name, tr.ID, tr.Temperature, c.want)
			}
		}
		var printed bytes.Buffer
		sum.Write(&printed)
		if !strings.Contains(printed.String(), "  sampling       "+c.report+", ") {
			t.Errorf("%s: summary lacks %q:\n%s", c.name, c.report, printed.String())
		}
	}
}
