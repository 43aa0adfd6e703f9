package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/tinymodel"
)

// TestQuantizedBaselines checks that a quantized row is compared with the
// float model's row at the same concurrency and workload only, and that a
// row without such a row keeps no ratio.
func TestQuantizedBaselines(t *testing.T) {
	rows := []ThroughputRow{
		{Model: "fp", Concurrency: 8, TokensPerSec: 100},
		{Model: "fp", Concurrency: 64, TokensPerSec: 300},
		{Model: "fp", Concurrency: 64, ToolCalls: true, TokensPerSec: 200},
		{Model: "q", Concurrency: 8, TokensPerSec: 250, Baseline: "fp"},
		{Model: "q", Concurrency: 64, ToolCalls: true, TokensPerSec: 300, Baseline: "fp"},
		{Model: "q", Concurrency: 16, TokensPerSec: 300, Baseline: "fp"},
	}
	peers := []PeerRow{
		{Model: "fp", G: 8, ToolrlTPS: 100, PeerTPS: 50},
		{Model: "q", G: 8, ToolrlTPS: 220, PeerTPS: 60, Baseline: "fp"},
	}
	quantizedBaselines(rows, peers)
	for i, want := range []float64{0, 0, 0, 2.5, 1.5, 0} {
		if rows[i].VsBaseline != want {
			t.Errorf("row %d (%s c%d tools %v): ratio %v, want %v", i, rows[i].Model, rows[i].Concurrency, rows[i].ToolCalls, rows[i].VsBaseline, want)
		}
	}
	if p := peers[1]; p.ToolrlVsFloat != 2.2 || p.PeerVsFloat != 1.2 {
		t.Errorf("peer row: toolrl %v, transformers.js %v vs the float model; want 2.2 and 1.2", p.ToolrlVsFloat, p.PeerVsFloat)
	}
	if peers[0].ToolrlVsFloat != 0 {
		t.Errorf("the float model's peer row got a ratio %v", peers[0].ToolrlVsFloat)
	}
}

// TestActorSessionConfig: SessionConfig entries reach ONNX Runtime's
// session (a value it refuses fails the load, naming the entry).
func TestActorSessionConfig(t *testing.T) {
	model := tinymodel.Write(t, 1, nil)
	o := ActorOptions{Models: []string{model}, Concurrencies: []int{1}, PromptLen: 32, NewTokens: 2, PeerG: 8, PeerRepeats: 1,
		Spin: true, SessionConfig: map[string]string{"session.force_spinning_stop": "1"}}
	if _, err := MeasureActor(context.Background(), o); err != nil {
		t.Fatalf("a valid entry: %v", err)
	}
	o.Spin, o.SessionConfig = false, map[string]string{"session.graph_optimization_level": "fastest"}
	_, err := MeasureActor(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "session.graph_optimization_level=fastest") {
		t.Errorf("a value ONNX Runtime refuses: err = %v, want one naming the entry", err)
	}
}
