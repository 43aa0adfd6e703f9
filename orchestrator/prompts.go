package orchestrator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
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

	// Iteration is the closed loop's iteration this sampling of the prompt
	// belongs to (0 for a plain rollout). It is part of the group's
	// identity, traj.GroupID(job, ID, Iteration), so the same prompt is a
	// new group in every iteration, and it chooses the sample seeds (Key).
	// It is not a prompts-file field: whoever feeds the prompt sets it
	// (RunOptions.Iteration, a PromptFeed, the prompts stream's iteration
	// field). ≥ 0.
	Iteration int `json:"-"`
	// MinPolicyVersion is the least policy version the prompt may be
	// sampled with (bounded staleness, as AReaL's: a trainer at version v
	// that accepts records at most s versions stale enqueues an iteration
	// with v - s). A runner whose loaded version is older drains its groups
	// in flight and loads a version ≥ it from its policy source before
	// starting the group (RunOptions.Policy). Like Iteration it is not a
	// prompts-file field: the prompts stream's min_policy_version field
	// carries it. 0: any version.
	MinPolicyVersion int64 `json:"-"`
	// Line is the 1-based line of the prompts file it came from.
	Line int `json:"-"`
}

// Key is the prompt's part of its group id: ID in iteration 0 and
// ID@Iteration after, so traj.GroupID(job, ID, Iteration) is job + "/" + Key.
// Sample seeds derive from it (actor.SampleSeed(job seed, Key, i): iteration
// 0 keeps the seeds of a plain rollout, a later iteration samples anew) and
// the prompts stream's queued set holds it. It is unique per (ID, Iteration)
// because an ID may not contain '@' (checkIdentity).
func (p *Prompt) Key() string {
	if p.Iteration == 0 {
		return p.ID
	}
	return p.ID + "@" + strconv.Itoa(p.Iteration)
}

// checkIdentity checks what makes the prompt's group id: a non-empty ID
// without '@' (the iteration separator: "p@1" in iteration 0 would be "p" in
// iteration 1) or '/' (the trajectory id separator: prompt "a/1" sample 0 and
// prompt "a" sample 1 would both be job/a/1/...) and an iteration ≥ 0.
func (p *Prompt) checkIdentity() error {
	switch {
	case p.ID == "":
		return errors.New(`field "id": missing or empty`)
	case strings.Contains(p.ID, "@"):
		return fmt.Errorf(`field "id": %q contains '@', which group ids reserve for the iteration (job/prompt@k)`, p.ID)
	case strings.Contains(p.ID, "/"):
		return fmt.Errorf(`field "id": %q contains '/', which separates the parts of trajectory ids (job/prompt/sample)`, p.ID)
	case p.Iteration < 0:
		return fmt.Errorf("prompt %s: iteration %d, want ≥ 0", p.ID, p.Iteration)
	}
	return nil
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
// field, missing or duplicate id, an id with '@' or '/', neither or both of
// prompt and messages) stops the read with a *PromptError naming the file and
// line, unless skipInvalid, in which case it is recorded in Skipped. Blank
// lines are ignored. limit > 0 stops after that many valid prompts. A file
// with no valid prompt (empty, blank, or every line skipped) is an error
// naming the file.
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
	if len(set.Prompts) == 0 {
		// A job over no prompts would write nothing and report success.
		if len(set.Skipped) > 0 {
			return set, fmt.Errorf("read prompts %s: no valid prompts (%d malformed lines skipped, the first: %v)", name, len(set.Skipped), set.Skipped[0])
		}
		return set, fmt.Errorf("read prompts %s: no prompts: the file is empty or blank", name)
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
	if err := p.checkIdentity(); err != nil {
		return p, err
	}
	switch {
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

// PromptList is a PromptFeed over a fixed list of prompts, handed out in
// order, each once; it never blocks. The runner uses one for a job's prompts
// file, and callers that already hold the prompts (an iteration's batch, the
// held-out set) pass one as RunOptions.Feed.
type PromptList struct {
	// Prompts are fed in order.
	Prompts []Prompt
	next    int
}

// Next implements PromptFeed.
func (f *PromptList) Next(context.Context, bool) (Prompt, bool, error) {
	if f.next >= len(f.Prompts) {
		return Prompt{}, false, nil
	}
	f.next++
	return f.Prompts[f.next-1], true, nil
}

// Done implements PromptFeed: a list has nothing to acknowledge.
func (f *PromptList) Done(context.Context, Prompt) error { return nil }
