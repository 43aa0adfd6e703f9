package orchestrator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Message is one chat message of a prompt (OpenAI shape).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Prompt is one line of a prompts file.
type Prompt struct {
	ID string `json:"id"`
	// Prompt is the plain text of the question; Messages is the chat form.
	// Exactly one of them is set.
	Prompt   string    `json:"prompt,omitempty"`
	Messages []Message `json:"messages,omitempty"`
	// Answer is the reference answer the outcome reward checks against.
	Answer json.RawMessage `json:"answer,omitempty"`
	// Meta is passed through to every trajectory of the prompt.
	Meta json.RawMessage `json:"meta,omitempty"`

	// Line is the 1-based line of the prompts file it came from.
	Line int `json:"-"`
}

// AnswerText returns the reference answer as text: a JSON string unquoted, a
// number as written.
func (p *Prompt) AnswerText() string {
	if len(p.Answer) == 0 || string(p.Answer) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(p.Answer, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(p.Answer))
}

// PromptError is a malformed prompts line.
type PromptError struct {
	File string
	Line int
	Err  error
}

func (e *PromptError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *PromptError) Unwrap() error { return e.Err }

// PromptSet is the result of reading a prompts file.
type PromptSet struct {
	Prompts []Prompt
	// Skipped are the malformed lines skipped under skip-invalid.
	Skipped []*PromptError
}

// ReadPrompts reads a JSONL prompts file. A malformed line (bad JSON, unknown
// field, missing or duplicate id, neither or both of prompt and messages) stops
// the read with a *PromptError naming the file and line, unless skipInvalid,
// in which case it is recorded in Skipped. Blank lines are ignored. limit > 0
// stops after that many valid prompts.
func ReadPrompts(path string, limit int, skipInvalid bool) (PromptSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return PromptSet{}, fmt.Errorf("read prompts: %w", err)
	}
	defer f.Close()
	return readPrompts(f, path, limit, skipInvalid)
}

func readPrompts(r io.Reader, name string, limit int, skipInvalid bool) (PromptSet, error) {
	var set PromptSet
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		p, err := parsePrompt(raw)
		if err == nil {
			if first, dup := seen[p.ID]; dup {
				err = fmt.Errorf("id %q already used on line %d", p.ID, first)
			}
		}
		if err != nil {
			perr := &PromptError{File: name, Line: line, Err: err}
			if !skipInvalid {
				return set, perr
			}
			set.Skipped = append(set.Skipped, perr)
			continue
		}
		p.Line = line
		seen[p.ID] = line
		set.Prompts = append(set.Prompts, p)
		if limit > 0 && len(set.Prompts) >= limit {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return set, fmt.Errorf("read prompts %s line %d: %w", name, line+1, err)
	}
	return set, nil
}

func parsePrompt(raw []byte) (Prompt, error) {
	var p Prompt
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("bad JSON: %w", err)
	}
	if dec.More() {
		return p, errors.New("bad JSON: more than one value on the line")
	}
	switch {
	case p.ID == "":
		return p, errors.New(`field "id": missing or empty`)
	case p.Prompt == "" && len(p.Messages) == 0:
		return p, errors.New(`neither "prompt" nor "messages" is set`)
	case p.Prompt != "" && len(p.Messages) > 0:
		return p, errors.New(`both "prompt" and "messages" are set; give one`)
	}
	for i, m := range p.Messages {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return p, fmt.Errorf("field \"messages[%d].role\": unknown role %q", i, m.Role)
		}
	}
	return p, nil
}
