package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

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
	// Sources maps each job-file key of Values to the layer that set its
	// value (setting.Source: default, generation_config.json, file, code,
	// flag, --set). Recorded, not compared: the same value from another
	// layer is the same setting.
	Sources map[string]string `json:"sources,omitempty"`
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

// SettingsStore is a Sink that keeps the settings record of its output.
type SettingsStore interface {
	// StoredSettings returns the record of the output (nil when it has
	// none), and whether the output already holds data. A file sink that
	// replaces its output (fresh) reports neither.
	StoredSettings(ctx context.Context) (rec *Settings, holds bool, err error)
	// RecordSettings stores s. With replace false a record already stored
	// is kept and returned (a concurrent worker recorded first); otherwise s
	// is returned. A fresh file sink first removes the output it replaces,
	// so the record never describes another run's groups.
	RecordSettings(ctx context.Context, s *Settings, replace bool) (*Settings, error)
	// SettingsWhere names the record (the sidecar path or the Redis key).
	SettingsWhere() string
}

// fileSettings is the settings record of a file output: a JSON sidecar
// (SettingsPath), replaced atomically.
type fileSettings struct {
	out   string
	fresh bool // the output is replaced, not resumed
}

func (f fileSettings) SettingsWhere() string { return SettingsPath(f.out) }

func (f fileSettings) StoredSettings(context.Context) (*Settings, bool, error) {
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

func (f fileSettings) RecordSettings(_ context.Context, s *Settings, _ bool) (*Settings, error) {
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
