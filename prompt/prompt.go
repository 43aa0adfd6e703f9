// Package prompt is where a rollout's prompts come from: the Prompt record
// (one line of a prompts file), the prompts-file reader, and the feeds that
// hand prompts to the orchestrator's runner: a fixed List, and the RedisFeed
// of a distributed worker, which claims prompts from the job's prompts stream
// (stream.Keys.Prompts) that Enqueue fills.
package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	// (orchestrator.RunOptions.Iteration, a Feed, the prompts stream's iteration
	// field). ≥ 0.
	Iteration int `json:"-"`
	// MinPolicyVersion is the least policy version the prompt may be
	// sampled with (bounded staleness, as AReaL's: a trainer at version v
	// that accepts records at most s versions stale enqueues an iteration
	// with v - s). A runner whose loaded version is older drains its groups
	// in flight and loads a version ≥ it from its policy source before
	// starting the group (orchestrator.RunOptions.Policy). Like Iteration it is not a
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
// because an ID may not contain '@' (CheckIdentity).
func (p *Prompt) Key() string {
	if p.Iteration == 0 {
		return p.ID
	}
	return p.ID + "@" + strconv.Itoa(p.Iteration)
}

// CheckIdentity checks what makes the prompt's group id: a non-empty ID
// without '@' (the iteration separator: "p@1" in iteration 0 would be "p" in
// iteration 1) or '/' (the trajectory id separator: prompt "a/1" sample 0 and
// prompt "a" sample 1 would both be job/a/1/...) and an iteration ≥ 0.
func (p *Prompt) CheckIdentity() error {
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

func parse(raw []byte) (Prompt, error) {
	var p Prompt
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("bad JSON: %w", err)
	}
	if dec.More() {
		return p, errors.New("bad JSON: more than one value on the line")
	}
	if err := p.CheckIdentity(); err != nil {
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
