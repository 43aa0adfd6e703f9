package prompt

import (
	"errors"
	"strings"
	"testing"
)

func TestReadPromptsNamesFileAndLine(t *testing.T) {
	input := `{"id":"a","prompt":"1+1?","answer":"2"}

{"id":"b","prompt":"2+2?","answer":4}
{"id":"c","prompt": oops}
{"id":"d","messages":[{"role":"user","content":"hi"}]}
`
	_, err := read(strings.NewReader(input), "p.jsonl", 0, false)
	var perr *LineError
	if !errors.As(err, &perr) || perr.File != "p.jsonl" || perr.Line != 4 {
		t.Fatalf("err = %v, want a LineError at p.jsonl:4", err)
	}
	if !strings.HasPrefix(err.Error(), "p.jsonl:4: bad JSON") {
		t.Errorf("message %q does not start with the place", err)
	}

	set, err := read(strings.NewReader(input), "p.jsonl", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Prompts) != 3 || len(set.Skipped) != 1 || set.Skipped[0].Line != 4 {
		t.Fatalf("got %d prompts, skipped %v; want 3 and line 4", len(set.Prompts), set.Skipped)
	}
	if set.Prompts[1].AnswerText() != "4" || set.Prompts[0].AnswerText() != "2" {
		t.Errorf("answers %q %q", set.Prompts[0].AnswerText(), set.Prompts[1].AnswerText())
	}
	if set.Prompts[2].Line != 5 {
		t.Errorf("line of d = %d, want 5", set.Prompts[2].Line)
	}
}

func TestReadPromptsRejects(t *testing.T) {
	for name, line := range map[string]string{
		"missing id":     `{"prompt":"x"}`,
		"unknown field":  `{"id":"a","prompt":"x","extra":1}`,
		"no prompt":      `{"id":"a"}`,
		"both":           `{"id":"a","prompt":"x","messages":[{"role":"user","content":"y"}]}`,
		"bad role":       `{"id":"a","messages":[{"role":"robot","content":"y"}]}`,
		"duplicate id":   `{"id":"a","prompt":"x"}` + "\n" + `{"id":"a","prompt":"y"}`,
		"two values":     `{"id":"a","prompt":"x"} {"id":"b","prompt":"y"}`,
		"not an object":  `[1,2]`,
		"truncated line": `{"id":"a","prompt":"x`,
		// The iteration is set by whoever feeds the prompt, never by the file,
		// and '@' separates it in group ids.
		"iteration field": `{"id":"a","prompt":"x","iteration":1}`,
		"@ in id":         `{"id":"a@1","prompt":"x"}`,
	} {
		if _, err := read(strings.NewReader(line), "f", 0, false); err == nil {
			t.Errorf("%s: accepted %s", name, line)
		}
	}
}

func TestReadPromptsLimit(t *testing.T) {
	input := ""
	for i := 0; i < 10; i++ {
		input += `{"id":"p` + string(rune('0'+i)) + `","prompt":"q"}` + "\n"
	}
	set, err := read(strings.NewReader(input), "f", 4, false)
	if err != nil || len(set.Prompts) != 4 || set.Prompts[3].ID != "p3" {
		t.Fatalf("limit 4: %v %v", err, set.Prompts)
	}
}
