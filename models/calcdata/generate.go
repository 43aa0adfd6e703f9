package calcdata

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
)

// Seeds of the two splits. Train and test are drawn from different streams and
// training skips any prompt text that is also a test prompt.
const (
	TrainSeed uint64 = 1
	TestSeed  uint64 = 2
)

// newRand returns the generator's deterministic stream for seed.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
}

// TestProblems returns the n held-out problems (seed TestSeed), at the default
// easy rate; duplicates are skipped so every prompt is distinct.
func TestProblems(n int) []Problem {
	r := newRand(TestSeed)
	mix := DefaultMix()
	seen := map[string]bool{}
	out := make([]Problem, 0, n)
	for len(out) < n {
		p := draw(r, mix.EasyRate)
		k := normalizePrompt(p.Prompt)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, p)
	}
	return out
}

// TrainExamples returns n training examples (seed TrainSeed) under mix; prompts
// equal to any of the first heldOut test prompts are skipped.
func TrainExamples(n int, mix Mix, heldOut int) []Example {
	test := map[string]bool{}
	for _, p := range TestProblems(heldOut) {
		test[normalizePrompt(p.Prompt)] = true
	}
	r := newRand(TrainSeed)
	out := make([]Example, 0, n)
	for len(out) < n {
		p := draw(r, mix.EasyRate)
		if test[normalizePrompt(p.Prompt)] {
			continue
		}
		out = append(out, Complete(r, p, mix))
	}
	return out
}

// PromptRecord is one line of data/calc/prompts.jsonl.
type PromptRecord struct {
	ID     string `json:"id"`
	Prompt string `json:"prompt"`
	Answer string `json:"answer"`
}

// WritePrompts writes problems as JSONL prompt records with ids calc-0000, calc-0001, ...
func WritePrompts(w io.Writer, problems []Problem) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i, p := range problems {
		rec := PromptRecord{ID: fmt.Sprintf("calc-%04d", i), Prompt: p.Prompt, Answer: p.AnswerText()}
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("write prompt %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write prompts: %w", err)
	}
	return nil
}

// ReadPrompts reads JSONL prompt records.
func ReadPrompts(r io.Reader) ([]PromptRecord, error) {
	var out []PromptRecord
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec PromptRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("read prompts line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read prompts line %d: %w", line, err)
	}
	return out, nil
}
