package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
)

// TestUsageErrorsExit2 runs the CLI as main does: every usage error exits 2
// and names the verb or flag, with "did you mean" for a mistyped one.
// Before, an unknown flag or verb exited 1 with no suggestion, and
// `tools parse` without a format silently parsed brackets.
func TestUsageErrorsExit2(t *testing.T) {
	calc := filepath.Join(testsupport.RepoRoot(t), "tools", "testdata", "calc.yaml")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"rollot"}, []string{`unknown verb "rollot"`, "did you mean rollout?"}},
		{[]string{"rollot", "--model", "m"}, []string{`unknown verb "rollot"`, "did you mean rollout?"}},
		{[]string{"tools", "lst"}, []string{"tools: unknown verb", "did you mean list?"}},
		{[]string{"model", "buidl"}, []string{"model: unknown verb", "did you mean build?"}},
		{[]string{"rollout", "--bacth", "3"}, []string{"rollout: unknown flag --bacth", "did you mean --batch?"}},
		{[]string{"export", "--form", "x"}, []string{"export: unknown flag --form", "did you mean --from?"}},
		{[]string{"learn", "--batch", "x"}, []string{"learn:", `"--batch"`}},
		{[]string{"tools", "parse", "a", "b"}, []string{"tools parse:", "received 2"}},
		{[]string{"tools", "parse", "--tools", calc, "So [CALC: 1+1]"}, []string{"--model DIR", "--format"}},
		{[]string{"tools", "parse", "--tools", calc, "--format", "nope", "x"}, []string{"--format", "nope"}},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, code, exitUsage, errb.String())
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%v: stderr %q does not say %q", c.args, errb.String(), w)
			}
		}
	}
}

// TestToolsParseFormatFromModel: --model takes the call format a rollout of
// the folder uses: models/calc's prompt_format.json (bracket), a Qwen3
// folder's chat template (Hermes).
func TestToolsParseFormatFromModel(t *testing.T) {
	root := testsupport.RepoRoot(t)
	calc := filepath.Join(root, "tools", "testdata", "calc.yaml")
	for _, c := range []struct {
		model, text string
	}{
		{filepath.Join(root, "models", "calc"), "So [CALC: 12 * 34]"},
		{qwen3Folder(t), `<tool_call>{"name": "calculator", "arguments": {"expression": "12 * 34"}}</tool_call>`},
	} {
		var out, errb bytes.Buffer
		if code := run([]string{"tools", "parse", "--tools", calc, "--model", c.model, "--exec", c.text}, &out, &errb); code != exitOK {
			t.Fatalf("%s: exit %d\n%s", c.model, code, errb.String())
		}
		if !strings.Contains(out.String(), `"name":"calculator"`) || !strings.Contains(out.String(), "408") {
			t.Errorf("%s: %s", c.model, out.String())
		}
	}
}
