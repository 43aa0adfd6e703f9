package actor

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
)

// A policy whose weights are not finite (a diverged learner's) is refused at
// load, naming the folder, instead of sampling garbage that the rollout
// reports as "built an invalid group (a bug in toolrl)" (#30).
func TestLoadRefusesNonFinitePolicy(t *testing.T) {
	testsupport.RequireORT(t)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		w, err := llama.RandomWeights(cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		down := w["model.layers.0.mlp.down_proj.weight"]
		for i := range down.Data {
			down.Data[i] = bad
		}
		dir := filepath.Join(t.TempDir(), "diverged")
		if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w}); err != nil {
			t.Fatal(err)
		}
		pol, err := Load(context.Background(), LoadOptions{Dir: dir, IntraOpThreads: 1, InterOpThreads: 1})
		if err == nil {
			pol.Close()
			t.Errorf("weights %v: loaded", bad)
			continue
		}
		if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "not finite") {
			t.Errorf("weights %v: error %v, want one naming %s and non-finite logits", bad, err, dir)
		}
	}
	// A sound policy still loads.
	pol, _ := loadTiny(t, 1)
	_ = pol
}
