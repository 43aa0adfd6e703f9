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
	"github.com/toolrl/toolrl/internal/atomicfile"
)

// The settings record (resume with other settings). An output records the
// settings of the run that created it: a file sink in a sidecar,
// OUT.settings.json (SettingsPath), a Redis output in the job's settings key
// (stream.Keys.Settings). A resumed run compares its own settings with the
// recorded ones and refuses to go on when one differs
// (SettingsMismatchError), so one output never silently mixes groups
// sampled with two seeds, temperatures, group sizes or models. A
// distributed worker is a resumed run of the job's Redis output: the first
// worker records the job's settings and every later one must agree.

// SettingsSchema names the format of a settings record.
const SettingsSchema = "toolrl.settings/v1"

// Settings is the record of what a job's groups were sampled with.
type Settings struct {
	Schema string `json:"schema"`
	// Values maps each setting that changes what a group contains to its
	// value as text: job-file keys (seed, group_size, sampling.temperature,
	// limits.max_tool_calls, rewards.outcome, ...) and identities of the
	// files the job reads (model.weights, model.tokenizer, model.config,
	// ref_model.weights, tools, prompts: "sha256:HEX" or "none"). Settings
	// that only change speed or scheduling (batch, threads, provider,
	// tool_concurrency, limit, skip_invalid) and those a run is meant to
	// change (policy_version, the iteration, out, resume) are not in it.
	Values map[string]string `json:"settings"`
	// Info is recorded but not compared: the prompts file's path and when
	// the record was written.
	Info map[string]string `json:"info,omitempty"`
	// Replaced holds the Values of earlier records that a run with
	// ForceResume wrote over, oldest first: the output then holds groups of
	// each of them.
	Replaced []map[string]string `json:"replaced,omitempty"`
}

// SettingsDiff is one setting whose value differs between the run that
// wrote an output and the run that resumes it.
type SettingsDiff struct {
	Key      string
	Old, New string
}

// SettingsMismatchError refuses a resume whose settings differ from those
// recorded with the output.
type SettingsMismatchError struct {
	// Out is the output as displayed (a Redis URL redacted); Where is the
	// record (the sidecar path, or the Redis key).
	Out, Where string
	// Redis is true for a Redis output (a distributed job's workers).
	Redis bool
	// Diffs lists the differing settings, sorted by key.
	Diffs []SettingsDiff
}

func (e *SettingsMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "resume %s: settings differ from the run that wrote it (%s): ", e.Out, e.Where)
	for i, d := range e.Diffs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s → %s", d.Key, d.Old, d.New)
	}
	if e.Redis {
		b.WriteString("; use --force-resume (force_resume: true) to write into this job anyway, or another --job")
	} else {
		b.WriteString("; use --force-resume (force_resume: true) to append anyway, or another --out")
	}
	return b.String()
}

// SettingsPath is the sidecar that records the settings of a file output.
func SettingsPath(out string) string { return out + ".settings.json" }

// settingsStore is a Sink that keeps the settings record of its output.
type settingsStore interface {
	// storedSettings returns the record of the output (nil when it has
	// none), and whether the output already holds data. A file sink that
	// replaces its output (fresh) reports neither.
	storedSettings(ctx context.Context) (rec *Settings, holds bool, err error)
	// recordSettings stores s. With replace false a record already stored
	// is kept and returned (a concurrent worker recorded first); otherwise s
	// is returned. A fresh file sink first removes the output it replaces,
	// so the record never describes another run's groups.
	recordSettings(ctx context.Context, s *Settings, replace bool) (*Settings, error)
	// settingsWhere names the record (the sidecar path or the Redis key).
	settingsWhere() string
}

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
func (r *runner) settings() (*Settings, error) {
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
	return &Settings{Schema: SettingsSchema, Values: values, Info: info}, nil
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
func diffSettings(old, cur map[string]string) []SettingsDiff {
	var diffs []SettingsDiff
	for k, v := range cur {
		if o, ok := old[k]; ok && o != v {
			diffs = append(diffs, SettingsDiff{Key: k, Old: shortHash(o), New: shortHash(v)})
		}
	}
	slices.SortFunc(diffs, func(a, b SettingsDiff) int { return strings.Compare(a.Key, b.Key) })
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
// (SettingsMismatchError) unless the job has ForceResume, warns and records
// when the output predates settings records, and leaves alone a sink the
// caller passed in (RunOptions.Sink: the closed loop's, an evaluation's).
func (r *runner) checkSettings(ctx context.Context) error {
	store, ok := r.sink.(settingsStore)
	if !ok || r.opts.Sink != nil {
		return nil
	}
	out := DisplayOut(r.job.Out.Get())
	cur, err := r.settings()
	if err != nil {
		return fmt.Errorf("settings of %s: %w", out, err)
	}
	old, holds, err := store.storedSettings(ctx)
	if err != nil {
		if !r.job.ForceResume.Get() {
			return fmt.Errorf("resume %s: %w (use --force-resume to replace the record)", out, err)
		}
		r.log.Warn("force resume: replacing an unreadable settings record", "out", out, "record", store.settingsWhere(), "err", err)
		if _, err := store.recordSettings(ctx, cur, true); err != nil {
			return fmt.Errorf("record settings of %s: %w", out, err)
		}
		return nil
	}
	if old == nil {
		if holds {
			r.log.Warn("resume: the output has no settings record (written by an older toolrl); its settings cannot be checked, this run's are recorded now",
				"out", out, "record", store.settingsWhere())
		}
		won, err := store.recordSettings(ctx, cur, false)
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
		return &SettingsMismatchError{Out: out, Where: store.settingsWhere(), Redis: isRedisOut(r.job.Out.Get()), Diffs: diffs}
	}
	if len(diffs) > 0 {
		attrs := []any{"out", out, "record", store.settingsWhere()}
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
	if _, err := store.recordSettings(ctx, cur, true); err != nil {
		return fmt.Errorf("record settings of %s: %w", out, err)
	}
	return nil
}

// isRedisOut reports whether out is a Redis URL.
func isRedisOut(out string) bool {
	return strings.HasPrefix(out, "redis://") || strings.HasPrefix(out, "rediss://")
}

// fileSettings is the settings record of a file output: a JSON sidecar
// (SettingsPath), replaced atomically.
type fileSettings struct {
	out   string
	fresh bool // the output is replaced, not resumed
}

func (f fileSettings) settingsWhere() string { return SettingsPath(f.out) }

func (f fileSettings) storedSettings(context.Context) (*Settings, bool, error) {
	if f.fresh {
		return nil, false, nil
	}
	st, err := os.Stat(f.out)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil // a record without its output describes nothing
	}
	if err != nil {
		return nil, false, err
	}
	holds := st.Size() > 0
	data, err := os.ReadFile(SettingsPath(f.out))
	if errors.Is(err, os.ErrNotExist) {
		return nil, holds, nil
	}
	if err != nil {
		return nil, holds, err
	}
	rec, err := decodeSettings(data, SettingsPath(f.out))
	return rec, holds, err
}

// decodeSettings reads a settings record stored at where.
func decodeSettings(data []byte, where string) (*Settings, error) {
	var s Settings
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("settings record %s: %w", where, err)
	}
	if s.Schema != SettingsSchema {
		return nil, fmt.Errorf("settings record %s: schema %q, want %q", where, s.Schema, SettingsSchema)
	}
	return &s, nil
}

func (f fileSettings) recordSettings(_ context.Context, s *Settings, _ bool) (*Settings, error) {
	if f.fresh {
		if err := os.Remove(f.out); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("replace %s: %w", f.out, err)
		}
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return s, atomicfile.WriteFile(SettingsPath(f.out), append(data, '\n'))
}
