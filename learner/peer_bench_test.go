package learner

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// peerDir is where BenchmarkLearnerUpdate leaves, per float32 shape, what
// the PyTorch peer (scripts/bench/learner_peer.py, make bench-learner-peer)
// needs to run the same update: the model folder before the first update
// (config.json, model.safetensors), the batch (records.jsonl, the advantage
// stream's JSON) and this run's figures (go.json). Empty: nothing is written.
var peerDir = flag.String("peer-dir", "", "write each float32 shape's model, batch and timings under this folder for the PyTorch peer")

// peerRun is go.json: one benchmark run of one shape.
type peerRun struct {
	Shape      string  `json:"shape"`
	Kernel     string  `json:"kernel"`
	Updates    int     `json:"updates"`
	Tokens     int     `json:"tokens_per_update"`
	Trained    int     `json:"tokens_trained_per_update"`
	Seconds    float64 `json:"seconds"`
	TokensPerS float64 `json:"tokens_per_s"`
	// UpdateSeconds is each update's Metrics.Seconds, in order.
	UpdateSeconds []float64 `json:"update_seconds"`
	// First is the first update's metrics: its loss and grad_norm are those
	// of the written weights on the written batch.
	First Metrics `json:"first"`
}

// peerShapeDir writes m's folder and recs under peerDir/<shape>, shape
// being the sub-benchmark's name, and returns that folder; "" when -peer-dir
// is unset or m is not a float32 model (the peer runs float32).
func peerShapeDir(b *testing.B, m train.Net, recs []traj.AdvantageRecord) string {
	m32, ok := m.(*train.Model)
	if *peerDir == "" || !ok {
		return ""
	}
	dir := filepath.Join(*peerDir, b.Name()[strings.LastIndex(b.Name(), "/")+1:])
	if err := m32.WriteFolder(dir, 0, 0, 0, train.FolderFiles{}); err != nil {
		b.Fatalf("peer: %v", err)
	}
	var lines []byte
	for i := range recs {
		line, err := wire.EncodeRecord(&recs[i])
		if err != nil {
			b.Fatalf("peer: record %d: %v", i, err)
		}
		lines = append(append(lines, line...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "records.jsonl"), lines, 0o644); err != nil {
		b.Fatalf("peer: %v", err)
	}
	return dir
}

// writePeerRun writes run as dir/go.json (a later run of the same shape,
// the benchmark's b.N round after its N=1 probe, replaces it).
func writePeerRun(b *testing.B, dir string, run peerRun) {
	buf, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		b.Fatalf("peer: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.json"), append(buf, '\n'), 0o644); err != nil {
		b.Fatalf("peer: %v", err)
	}
}
