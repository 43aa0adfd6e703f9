package calcdata

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
)

// Seeds of the three prompt streams. Train, test and RL prompts are drawn from
// different streams; training skips any prompt text that is also a held-out
// test prompt, and the RL set skips the held-out test prompts and the shipped
// model's training prompts.
const (
	TrainSeed uint64 = 1
	TestSeed  uint64 = 2
	RLSeed    uint64 = 3
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
	out := make([]Example, 0, max(n, 0))
	if n <= 0 {
		return out
	}
	for ex := range trainStream(mix, heldOut) {
		out = append(out, ex)
		if len(out) == n {
			break
		}
	}
	return out
}

// trainStream yields the training examples in order, without end;
// TrainExamples(n, mix, heldOut) is its first n.
func trainStream(mix Mix, heldOut int) iter.Seq[Example] {
	return func(yield func(Example) bool) {
		test := map[string]bool{}
		for _, p := range TestProblems(heldOut) {
			test[normalizePrompt(p.Prompt)] = true
		}
		r := newRand(TrainSeed)
		for {
			p := draw(r, mix.EasyRate)
			if test[normalizePrompt(p.Prompt)] {
				continue
			}
			// Complete draws from r too, so it runs even when only the
			// prompts are wanted: the stream is the trainer's, draw for draw.
			if !yield(Complete(r, p, mix)) {
				return
			}
		}
	}
}

// sftPrompts returns the normalised prompt texts the shipped model was trained
// on: those of TrainExamples(DefaultPolicyOptions().Examples, DefaultMix(),
// HeldOut), which include the tokenizer's TokExamples (a prefix of the same
// stream). About 0.3 s and 155k distinct prompts.
func sftPrompts() map[string]bool {
	n := DefaultPolicyOptions().Examples
	out := make(map[string]bool, n)
	i := 0
	for ex := range trainStream(DefaultMix(), HeldOut) {
		out[normalizePrompt(ex.Prompt)] = true
		if i++; i == n {
			break
		}
	}
	return out
}

// RLProblems returns n distinct RL training problems (seed RLSeed) that are
// neither one of the HeldOut test prompts nor a prompt the shipped model was
// trained on (sftPrompts). The easy share is the held-out set's: round(n·e/HeldOut)
// problems are easy, where e is the number of easy problems in
// TestProblems(HeldOut) (72 of 256, so 288 of 1024), the rest hard. Problems
// are drawn from the RL stream in order and kept while their class has room, so
// the set is deterministic. Excluding the training prompts removes most of the
// small easy prompt space (every "What is a plus b?" with a, b in 1–5 was
// trained on); the easy RL problems come mostly from the templates with names
// and objects. It fails when the stream cannot fill the set (n far beyond the
// distinct easy prompts left, about 90k).
func RLProblems(n int) ([]Problem, error) {
	exclude := sftPrompts()
	test := TestProblems(HeldOut)
	easyTest := 0
	for _, p := range test {
		exclude[normalizePrompt(p.Prompt)] = true
		if p.Easy {
			easyTest++
		}
	}
	wantEasy := (2*n*easyTest + HeldOut) / (2 * HeldOut) // round(n·easyTest/HeldOut)
	wantHard := n - wantEasy
	r := newRand(RLSeed)
	mix := DefaultMix()
	out := make([]Problem, 0, n)
	budget := 100*n + 1_000_000
	for draws := 0; len(out) < n; draws++ {
		if draws == budget {
			return nil, fmt.Errorf("rl prompts: %d draws gave %d of %d problems (%d easy, %d hard left to find)", draws, len(out), n, wantEasy, wantHard)
		}
		p := draw(r, mix.EasyRate)
		k := normalizePrompt(p.Prompt)
		if exclude[k] {
			continue
		}
		switch {
		case p.Easy && wantEasy > 0:
			wantEasy--
		case !p.Easy && wantHard > 0:
			wantHard--
		default:
			continue
		}
		exclude[k] = true // distinct
		out = append(out, p)
	}
	return out, nil
}

// Split names one of the shipped prompt sets.
type Split string

const (
	// SplitTest is the held-out evaluation set (TestProblems, ids calc-NNNN).
	SplitTest Split = "test"
	// SplitRL is the RL training prompt set (RLProblems, ids calc-rl-NNNN).
	SplitRL Split = "rl"
)

// ParseSplit returns the split named s ("test" or "rl").
func ParseSplit(s string) (Split, error) {
	switch sp := Split(s); sp {
	case SplitTest, SplitRL:
		return sp, nil
	}
	return "", fmt.Errorf("unknown split %q (want test or rl)", s)
}

// Size is the number of prompts shipped for the split: HeldOut or RLPrompts.
func (s Split) Size() int {
	if s == SplitRL {
		return RLPrompts
	}
	return HeldOut
}

// Path is the split's shipped file, relative to the repository root.
func (s Split) Path() string {
	if s == SplitRL {
		return "data/calc/rl.jsonl"
	}
	return "data/calc/prompts.jsonl"
}

// IDPrefix prefixes the split's prompt ids, followed by the index as %04d.
func (s Split) IDPrefix() string {
	if s == SplitRL {
		return "calc-rl-"
	}
	return "calc-"
}

// Problems returns the split's first n problems. Only the first HeldOut test
// problems are guaranteed disjoint from the RL set and from training.
func (s Split) Problems(n int) ([]Problem, error) {
	if s == SplitRL {
		return RLProblems(n)
	}
	return TestProblems(n), nil
}

// Difficulty labels of a prompt's meta.
const (
	DifficultyEasy = "easy"
	DifficultyHard = "hard"
)

// PromptMeta is the meta object of a prompt line; the orchestrator passes it
// through to every trajectory of the prompt.
type PromptMeta struct {
	// Difficulty is DifficultyEasy or DifficultyHard (Problem.Difficulty).
	Difficulty string `json:"difficulty"`
}

// PromptRecord is one line of a calc prompts file (data/calc/prompts.jsonl,
// data/calc/rl.jsonl).
type PromptRecord struct {
	ID     string `json:"id"`
	Prompt string `json:"prompt"`
	Answer string `json:"answer"`
	// Meta is empty when read from a file written before it existed.
	Meta PromptMeta `json:"meta"`
}

// WritePrompts writes problems as JSONL prompt records with ids
// split.IDPrefix()+"0000", +"0001", ... and meta.difficulty.
func WritePrompts(w io.Writer, split Split, problems []Problem) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i, p := range problems {
		rec := PromptRecord{
			ID:     fmt.Sprintf("%s%04d", split.IDPrefix(), i),
			Prompt: p.Prompt,
			Answer: p.AnswerText(),
			Meta:   PromptMeta{Difficulty: p.Difficulty()},
		}
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("write prompt %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write prompts: %w", err)
	}
	return nil
}
