package actor

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
)

// tinyModel writes the tiny random Llama into a temporary folder and
// returns the folder and its Go reference.
func tinyModel(t testing.TB, seed uint64) (string, *llama.Reference) {
	t.Helper()
	testsupport.RequireORT(t)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	// Ten times the usual initialisation: sharp attention and peaked logits,
	// so that a wrong position, mask or cache row changes the tokens.
	cfg.InitializerRange = 0.2
	w, err := llama.RandomWeights(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w}); err != nil {
		t.Fatal(err)
	}
	ref, err := llama.NewReference(cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	return dir, ref
}

// loadTiny loads the tiny model with one ORT thread (tests share the CPU).
func loadTiny(t testing.TB, seed uint64) (*Policy, *llama.Reference) {
	t.Helper()
	dir, ref := tinyModel(t, seed)
	pol, err := Load(context.Background(), LoadOptions{Dir: dir, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pol.Close() })
	return pol, ref
}

// prompt makes a deterministic prompt of n byte tokens.
func prompt(n int, salt int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32('a' + (i*7+salt*13)%26)
	}
	return p
}

// runAll steps the engine until it is idle, injecting inject(seq) after
// every tool call, and fails on errors or a runaway loop.
func runAll(t testing.TB, eng *Engine, inject func(s *Sequence) []int32) {
	t.Helper()
	ctx := context.Background()
	for steps := 0; !eng.Idle(); steps++ {
		if steps > 100000 {
			t.Fatal("engine did not finish")
		}
		events, err := eng.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.Kind == EventToolCall {
				if err := ev.Seq.Inject(inject(ev.Seq)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
