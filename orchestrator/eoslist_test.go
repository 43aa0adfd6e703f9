package orchestrator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/tokenizer"
	"github.com/toolrl/toolrl/traj"
)

// TestGenerationConfigEOSListStopsOnEveryID: generation_config.json's
// eos_token_id is a list (Qwen ships [151645, 151643]); every id of it
// ends a trajectory, not only the first. A tiny random chat model lists one
// id first and 40 others after it: trajectories that stop end on one of
// the list, and some end on an id other than the first.
func TestGenerationConfigEOSListStopsOnEveryID(t *testing.T) {
	testsupport.RequireORT(t)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := llama.RandomWeights(cfg, 5)
	model := filepath.Join(t.TempDir(), "m")
	if _, err := llama.WriteFolder(model, llama.FolderSpec{Config: cfg, Weights: w}); err != nil {
		t.Fatal(err)
	}
	eos := []int32{300}
	for id := int32(60); id < 100; id++ {
		eos = append(eos, id)
	}
	gc, _ := json.Marshal(map[string]any{"eos_token_id": eos})
	if err := os.WriteFile(filepath.Join(model, "generation_config.json"), gc, 0o644); err != nil {
		t.Fatal(err)
	}
	// The stop ids are the list, then tokenizer_config.json's eos_token
	// when the list lacks it.
	_, special, err := tokenizer.LoadDir(model)
	if err != nil {
		t.Fatal(err)
	}
	stops := special.EOSIDs
	if !slices.Equal(stops[:len(eos)], eos) {
		t.Fatalf("stop ids %v do not start with generation_config.json's list %v", stops, eos)
	}
	prompts := filepath.Join(t.TempDir(), "p.jsonl")
	os.WriteFile(prompts, []byte(`{"id":"a","messages":[{"role":"user","content":"2+2?"}],"answer":"4"}`+"\n"+`{"id":"b","messages":[{"role":"user","content":"3+3?"}],"answer":"6"}`+"\n"), 0o644)
	out := filepath.Join(t.TempDir(), "eos.jsonl")
	job := tinyJob(model, prompts, out)
	job.Format = setting.Of("chat")
	job.Sampling.MaxNewTokens = setting.Of(64)
	if _, err := quietRun(t, context.Background(), job, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	stopped, later := 0, 0
	for _, tr := range readTrajectories(t, out) {
		last := tr.Tokens[len(tr.Tokens)-1]
		if tr.FinishReason != traj.FinishStop {
			continue
		}
		stopped++
		if !slices.Contains(stops, last) {
			t.Errorf("%s stopped on %d, which is not a stop id", tr.ID, last)
		}
		if last != eos[0] {
			later++
		}
	}
	if later == 0 {
		t.Fatalf("no trajectory stopped on an eos id past the first (%d stopped)", stopped)
	}
	t.Logf("%d trajectories stopped, %d on an id past the first of eos_token_id", stopped, later)
}
