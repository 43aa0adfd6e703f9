package trainer

import (
	"bytes"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/setting"
)

var update = flag.Bool("update", false, "rewrite docs/settings.md")

// settingsDoc writes the settings reference from the declarations: the
// rollout job's (a job file, `toolrl rollout`'s flags, a train config's
// rollout: section) and a train config's other sections.
func settingsDoc() []byte {
	var b bytes.Buffer
	b.WriteString(`# Settings

Every setting of toolrl's rollout job and training run, written from their
one declaration (each field's key, flag, default and help, in
` + "`orchestrator.Job`, `reward.Config`, `trainer.Config`, `learner.Spec` and `advantage.Spec`" + `) by
` + "`go test ./trainer -run TestSettingsDocIsCurrent -update`" + `; the test fails when this page is stale.

A value comes from the highest layer that sets it: a flag or ` + "`--set KEY=VALUE`" + `, then
the file (a job file, or a train config), then, for the sampling keys, the model
folder's ` + "`generation_config.json`" + `, then the default below. A value knows whether it
was set, so an explicit 0 is a value (refused, naming the key or flag, where it
is out of range), never "unset". A run's summary reports each sampling value
with the layer that set it, and its settings record (` + "`OUT.settings.json`" + `, or the
job's Redis key) holds every value with its source. A default "—" is none (the
empty value) or one derived from other settings, as the help says.

## The rollout job

The keys of a job file (` + "`toolrl rollout --job-file`" + `) and of a train config's
` + "`rollout:`" + ` section; ` + "`toolrl rollout --set KEY=VALUE`" + ` sets any of them, and
` + "`toolrl train --set rollout.KEY=VALUE`" + ` in a training run.

`)
	var job orchestrator.Job
	b.WriteString(setting.Markdown(&job, ""))
	b.WriteString(`
One job key is not a single value: ` + "`chat_template_kwargs`" + `, a mapping of extra
chat-template variables (e.g. ` + "`enable_thinking: false`" + ` for Qwen3), which
` + "`--chat-template-kwargs '{...}'`" + ` (a JSON object) replaces.

## The training run

The other keys of a train config (` + "`toolrl train --config`" + `, docs/train.md);
` + "`toolrl train --set KEY=VALUE`" + ` sets any of them. The ` + "`learner.*`" + ` keys are
` + "`toolrl learn`" + `'s flags, the ` + "`advantage.*`" + ` keys those of ` + "`toolrl advantage`" + `
and ` + "`advantage serve`" + ` (which also take ` + "`--max-staleness`" + ` and ` + "`--flag-stale`" + `, refused
in a train config, where the learner drops stale records: ` + "`learner.max_staleness`" + `).
A ` + "`rollout_quantization.*`" + ` key takes ` + "`--set`" + ` when the file has the section.

`)
	cfg := Config{RolloutQuantization: &QuantizationConfig{}}
	var rows []string
	for _, line := range strings.Split(setting.Markdown(&cfg, ""), "\n") {
		// The rollout's keys are above; the advantage staleness keys are
		// the service's (a train config refuses them).
		if !strings.HasPrefix(line, "| `rollout.") && !strings.HasPrefix(line, "| `advantage.max_staleness`") && !strings.HasPrefix(line, "| `advantage.flag_stale`") {
			rows = append(rows, line)
		}
	}
	b.WriteString(strings.Join(rows, "\n"))
	return b.Bytes()
}

// docs/settings.md is what the declarations say now.
func TestSettingsDocIsCurrent(t *testing.T) {
	got := settingsDoc()
	testsupport.CheckGenerated(t, filepath.Join("..", "docs", "settings.md"), got, *update, "go test ./trainer -run TestSettingsDocIsCurrent -update")
	for _, row := range []string{
		"| `group_size` | `--group-size` | int | `8` |",
		"| `sampling.temperature` | `--temperature` | float | `1` |",
		"| `rewards.call_cost` |  | float | `-0.1` |",
		"| `limits.max_tool_calls` |  | int | `3` |",
	} {
		if !strings.Contains(string(got), row) {
			t.Errorf("settings.md lacks %q", row)
		}
	}
}
