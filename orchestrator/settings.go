package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/sink"
)

// notSettings are the job-file keys that are not settings: speed and
// scheduling, what a run is meant to change, and the paths replaced by the
// identity of their contents.
var notSettings = map[string]bool{
	"limit": true, "skip_invalid": true, "policy_version": true,
	"batch": true, "threads": true, "provider": true, "tool_concurrency": true,
	"out": true, "resume": true, "force_resume": true,
	"sampling.greedy": true, // folded into sampling.temperature (0) by Normalize
	"model":           true, "ref_model": true, "prompts": true, "tools": true,
}

// modelConfigFiles are the small files of a model folder that change what
// the rollout does besides the weights and tokenizer.json: EOS ids, the chat
// template and special tokens (tokenizer_config.json, or chat_template.jinja
// beside it), the plain prompt format.
var modelConfigFiles = []string{"config.json", "generation_config.json", "tokenizer_config.json", chat.TemplateFile, "prompt_format.json"}

// jobSettings returns the settings of a normalized job: its job-file keys
// (notSettings aside), flattened to "section.key".
func jobSettings(job Job) map[string]string {
	values := map[string]string{}
	flattenSettings("", reflect.ValueOf(job), values)
	return values
}

func flattenSettings(prefix string, v reflect.Value, out map[string]string) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		key := prefix + name
		if notSettings[key] {
			continue
		}
		fv := v.Field(i)
		if sv, ok := fv.Interface().(interface{ Any() any }); ok {
			fv = reflect.ValueOf(sv.Any())
		} else if fv.Kind() == reflect.Struct {
			flattenSettings(key+".", fv, out)
			continue
		}
		out[key] = settingText(fv)
	}
}

// settingText writes a setting's value as text: numbers as Go writes them
// shortest (1, 0.7), lists as JSON, an unset pointer as "unset".
func settingText(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "unset"
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Slice, reflect.Map, reflect.Array:
		data, err := json.Marshal(v.Interface())
		if err != nil {
			return fmt.Sprint(v.Interface())
		}
		return string(data)
	}
	return fmt.Sprint(v.Interface())
}

// settings computes this run's settings record.
func (r *runner) settings() (*sink.Settings, error) {
	job := r.job
	values := jobSettings(job)
	values["model.weights"] = r.model.Hash
	var err error
	if values["model.tokenizer"], err = fileIdentity(filepath.Join(job.Model.Get(), "tokenizer.json")); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if values["model.config"], err = filesIdentity(job.Model.Get(), modelConfigFiles); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	values["ref_model.weights"] = "none"
	if r.ref != nil {
		ref, err := modelRef(job.RefModel.Get(), r.ref)
		if err != nil {
			return nil, fmt.Errorf("ref_model: %w", err)
		}
		values["ref_model.weights"] = ref.Hash
	}
	if values["tools"], err = fileIdentity(toolsFile(job)); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	info := map[string]string{"written_at": time.Now().UTC().Format(time.RFC3339)}
	if r.opts.Feed == nil {
		// A feed's prompts (a distributed worker's) come from the job's
		// prompts stream: what was enqueued, not a file of this run.
		if values["prompts"], err = fileIdentity(job.Prompts.Get()); err != nil {
			return nil, fmt.Errorf("prompts: %w", err)
		}
		if abs, err := filepath.Abs(job.Prompts.Get()); err == nil {
			info["prompts_path"] = abs
		}
	}
	sources := map[string]string{}
	for _, e := range setting.Entries(&job) {
		if _, ok := values[e.Key]; ok {
			sources[e.Key] = string(e.Source)
		}
	}
	return &sink.Settings{Schema: sink.SettingsSchema, Values: values, Sources: sources, Info: info}, nil
}

// toolsFile is the tools registry a job loads: its tools file, else the
// model folder's tools.yaml (or .yml, .json), else "" (no registry).
func toolsFile(job Job) string {
	if job.Tools.Get() != "" {
		return job.Tools.Get()
	}
	for _, name := range []string{"tools.yaml", "tools.yml", "tools.json"} {
		candidate := filepath.Join(job.Model.Get(), name)
		if _, err := os.Stat(candidate); err == nil {
			return candidate
		}
	}
	return ""
}

// fileIdentity is "sha256:HEX" of a file's contents, "none" for no path.
func fileIdentity(path string) (string, error) {
	if path == "" {
		return "none", nil
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return "", err
	}
	return "sha256:" + sum, nil
}

// filesIdentity hashes the named files of dir that exist, each with its
// name, so adding, removing or editing one changes the result.
func filesIdentity(dir string, names []string) (string, error) {
	h := sha256.New()
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(h, "%s %x\n", name, sum)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// diffSettings lists the settings recorded in old and set in cur to
// another value. A key only one side has (written by another version of
// toolrl, or a worker that reads no prompts file) is not compared.
func diffSettings(old, cur map[string]string) []sink.SettingsDiff {
	var diffs []sink.SettingsDiff
	for k, v := range cur {
		if o, ok := old[k]; ok && o != v {
			diffs = append(diffs, sink.SettingsDiff{Key: k, Old: shortHash(o), New: shortHash(v)})
		}
	}
	slices.SortFunc(diffs, func(a, b sink.SettingsDiff) int { return strings.Compare(a.Key, b.Key) })
	return diffs
}

// shortHash shortens a "sha256:HEX" identity to 12 hex digits for messages.
func shortHash(v string) string {
	if strings.HasPrefix(v, "sha256:") && len(v) > len("sha256:")+12 {
		return v[:len("sha256:")+12] + "…"
	}
	return v
}

// checkSettings compares this run's settings with the record of its output
// and records them: it refuses a resume whose settings differ
// (sink.SettingsMismatchError) unless the job has ForceResume, warns and records
// when the output predates settings records, and leaves alone a sink the
// caller passed in (RunOptions.Sink: the closed loop's, an evaluation's).
func (r *runner) checkSettings(ctx context.Context) error {
	store, ok := r.sink.(sink.SettingsStore)
	if !ok || r.opts.Sink != nil {
		return nil
	}
	out := sink.DisplayOut(r.job.Out.Get())
	cur, err := r.settings()
	if err != nil {
		return fmt.Errorf("settings of %s: %w", out, err)
	}
	old, holds, err := store.StoredSettings(ctx)
	if err != nil {
		if !r.job.ForceResume.Get() {
			return fmt.Errorf("resume %s: %w (use --force-resume to replace the record)", out, err)
		}
		r.log.Warn("force resume: replacing an unreadable settings record", "out", out, "record", store.SettingsWhere(), "err", err)
		if _, err := store.RecordSettings(ctx, cur, true); err != nil {
			return fmt.Errorf("record settings of %s: %w", out, err)
		}
		return nil
	}
	if old == nil {
		if holds {
			r.log.Warn("resume: the output has no settings record (written by an older toolrl); its settings cannot be checked, this run's are recorded now",
				"out", out, "record", store.SettingsWhere())
		}
		won, err := store.RecordSettings(ctx, cur, false)
		if err != nil {
			return fmt.Errorf("record settings of %s: %w", out, err)
		}
		if won == cur {
			return nil
		}
		old = won // another worker of the job recorded first: agree with it
	}
	diffs := diffSettings(old.Values, cur.Values)
	if len(diffs) > 0 && !r.job.ForceResume.Get() {
		return &sink.SettingsMismatchError{Out: out, Where: store.SettingsWhere(), Redis: isRedisOut(r.job.Out.Get()), Diffs: diffs}
	}
	if len(diffs) > 0 {
		attrs := []any{"out", out, "record", store.SettingsWhere()}
		for _, d := range diffs {
			attrs = append(attrs, d.Key, d.Old+" → "+d.New)
		}
		r.log.Warn("force resume: settings differ from the run that wrote the output; appending anyway and recording this run's", attrs...)
		cur.Replaced = append(slices.Clone(old.Replaced), old.Values)
	} else {
		missing := false
		for k := range cur.Values {
			if _, ok := old.Values[k]; !ok {
				missing = true
			}
		}
		if !missing {
			return nil
		}
		// Keep what only the old record has (a file run's prompts, seen by
		// a worker) and add what it lacked.
		merged := *old
		merged.Values = map[string]string{}
		for k, v := range old.Values {
			merged.Values[k] = v
		}
		for k, v := range cur.Values {
			merged.Values[k] = v
		}
		cur = &merged
	}
	if _, err := store.RecordSettings(ctx, cur, true); err != nil {
		return fmt.Errorf("record settings of %s: %w", out, err)
	}
	return nil
}

// isRedisOut reports whether out is a Redis URL.
func isRedisOut(out string) bool {
	return strings.HasPrefix(out, "redis://") || strings.HasPrefix(out, "rediss://")
}
