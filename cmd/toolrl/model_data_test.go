package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/recipe/calcdata"
)

// TestModelDataSplits: `toolrl model data` writes either prompt set with the
// split's ids and a meta.difficulty object that the rollout's prompt reader
// accepts and keeps for the trajectories.
func TestModelDataSplits(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		split, prefix string
		n             int
	}{{"test", "calc-", 16}, {"rl", "calc-rl-", 32}} {
		out := filepath.Join(dir, tc.split+".jsonl")
		if _, stderr, err := runToolrl(t, "model", "data", "--split", tc.split, "--n", fmt.Sprint(tc.n), "--out", out); err != nil {
			t.Fatalf("model data --split %s: %v\n%s", tc.split, err, stderr)
		}
		set, err := prompt.ReadFile(out, 0, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.split, err)
		}
		if len(set.Prompts) != tc.n {
			t.Fatalf("%s: %d prompts, want %d", tc.split, len(set.Prompts), tc.n)
		}
		for i, p := range set.Prompts {
			if want := fmt.Sprintf("%s%04d", tc.prefix, i); p.ID != want {
				t.Fatalf("%s line %d: id %q, want %q", tc.split, i+1, p.ID, want)
			}
			var meta calcdata.PromptMeta
			if err := json.Unmarshal(p.Meta, &meta); err != nil {
				t.Fatalf("%s %s: meta %s: %v", tc.split, p.ID, p.Meta, err)
			}
			if meta.Difficulty != calcdata.DifficultyEasy && meta.Difficulty != calcdata.DifficultyHard {
				t.Fatalf("%s %s: meta %s has no difficulty", tc.split, p.ID, p.Meta)
			}
		}
	}
	for _, args := range [][]string{{"--split", "train"}, {"--n", "0"}} {
		_, _, err := runToolrl(t, append([]string{"model", "data", "--out", filepath.Join(dir, "x.jsonl")}, args...)...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Fatalf("model data %v: err %v, want a usage error", args, err)
		}
	}
}
