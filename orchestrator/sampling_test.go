package orchestrator

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/tinymodel"
	"github.com/toolrl/toolrl/setting"
)

// TestResolveSamplingPrecedence: each key comes from the highest layer that
// sets it (flag > file > generation_config.json > default), an explicit zero
// included, and greedy is temperature 0 from whichever layer says it.
func TestResolveSamplingPrecedence(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"temperature": 0.5, "top_k": 20, "max_new_tokens": 64}`), 0o644)
	greedyDir := t.TempDir()
	os.WriteFile(filepath.Join(greedyDir, "generation_config.json"), []byte(`{"do_sample": false, "temperature": 0.5}`), 0o644)
	file, flag := setting.File, setting.Flag
	for _, c := range []struct {
		name, model string
		spec        SamplingSpec
		want        string // SamplingReport
		greedy      bool
	}{
		{"model over default", dir, SamplingSpec{},
			"temperature 0.5 (generation_config.json), top_k 20 (generation_config.json), top_p 1 (default), min_p 0 (default), max_new_tokens 64 (generation_config.json)", false},
		{"file over model", dir, SamplingSpec{Temperature: setting.From(0.7, file), MaxNewTokens: setting.From(32, file)},
			"temperature 0.7 (file), top_k 20 (generation_config.json), top_p 1 (default), min_p 0 (default), max_new_tokens 32 (file)", false},
		{"explicit top_k 0 over model", dir, SamplingSpec{TopK: setting.From(0, file)},
			"temperature 0.5 (generation_config.json), top_k 0 (file), top_p 1 (default), min_p 0 (default), max_new_tokens 64 (generation_config.json)", false},
		{"file greedy", dir, SamplingSpec{Greedy: setting.From(true, file)},
			"temperature 0 (greedy) (file), top_k 20 (generation_config.json)", true},
		{"flag temperature over file greedy", dir, SamplingSpec{Greedy: setting.From(true, file), Temperature: setting.From(0.9, flag)},
			"temperature 0.9 (flag)", false},
		{"flag greedy over file temperature", dir, SamplingSpec{Temperature: setting.From(0.9, file), Greedy: setting.From(true, flag)},
			"temperature 0 (greedy) (flag)", true},
		{"flag temperature 0 is greedy", dir, SamplingSpec{Temperature: setting.From(0.0, flag)},
			"temperature 0 (greedy) (flag)", true},
		{"flag greedy=false over file temperature 0", dir, SamplingSpec{Temperature: setting.From(0.0, file), Greedy: setting.From(false, flag)},
			"temperature 0.5 (generation_config.json)", false},
		{"model do_sample false", greedyDir, SamplingSpec{},
			"temperature 0 (greedy) (generation_config.json)", true},
		{"file over model do_sample false", greedyDir, SamplingSpec{Temperature: setting.From(0.7, file)},
			"temperature 0.7 (file)", false},
	} {
		j := Job{Model: setting.Of(c.model), Prompts: setting.Of("p.jsonl"), Sampling: c.spec}
		if err := j.Normalize(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := j.SamplingReport(); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %s, want it to begin %s", c.name, got, c.want)
		}
		if d := j.Decoding(); d.Greedy != c.greedy || (d.Greedy && d.Temperature != 0) {
			t.Errorf("%s: decoding %+v, greedy %v", c.name, d, c.greedy)
		}
		again := j
		if err := again.Normalize(); err != nil || again.SamplingReport() != j.SamplingReport() {
			t.Errorf("%s: a second Normalize changed %s into %s (%v)", c.name, j.SamplingReport(), again.SamplingReport(), err)
		}
	}
	for _, c := range []struct {
		name string
		spec SamplingSpec
		want string
	}{
		{"one layer, greedy and a temperature", SamplingSpec{Greedy: setting.From(true, file), Temperature: setting.From(0.7, file)}, "greedy with temperature 0.7 (the file)"},
		{"one layer, greedy false and temperature 0", SamplingSpec{Greedy: setting.From(false, flag), Temperature: setting.From(0.0, flag)}, "--temperature 0 with --greedy false"},
		{"explicit top_p 0", SamplingSpec{TopP: setting.From(0.0, file)}, "sampling.top_p: 0 (the file)"},
		{"explicit max_new_tokens 0", SamplingSpec{MaxNewTokens: setting.From(0, flag)}, "--max-new-tokens: 0 (the flags)"},
	} {
		j := Job{Model: setting.Of(dir), Prompts: setting.Of("p.jsonl"), Sampling: c.spec}
		if err := j.Normalize(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
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
	if !job.Sampling.TopK.IsSet() || job.Sampling.TopK.Source() != setting.File {
		t.Errorf("top_k: 0 not a setting of the file: %+v", job.Sampling.TopK)
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
		{"job key", model, func(j *Job) { j.Sampling.Temperature = setting.From(0.7, setting.File) }, 0.7, "temperature 0.7 (file)"},
		{"flag", model, func(j *Job) {
			j.Sampling.Temperature = setting.From(0.9, setting.Flag)
		}, 0.9, "temperature 0.9 (flag)"},
		{"do_sample false", greedyModel, func(*Job) {}, 0, "temperature 0 (greedy) (generation_config.json)"},
		{"job over do_sample false", greedyModel, func(j *Job) { j.Sampling.Temperature = setting.From(0.7, setting.File) }, 0.7, "temperature 0.7 (file)"},
	} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		job := tinyJob(c.model, prompts, out)
		job.Sampling = SamplingSpec{MaxNewTokens: setting.Of(8)}
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
