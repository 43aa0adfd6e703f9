package traj_test

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// parallelGroup reads testdata/parallel-calls-group.json: sample 0 makes two
// calls in turn 0 (two model segments, then two tool segments answering
// them in order) and answers in turn 1; sample 1 makes one call in turn 0
// and two in turn 1, where it ends at max_turns with both unanswered.
func parallelGroup(t *testing.T) traj.Group {
	t.Helper()
	data, err := os.ReadFile("testdata/parallel-calls-group.json")
	if err != nil {
		t.Fatal(err)
	}
	var g traj.Group
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("testdata/parallel-calls-group.json: %v", err)
	}
	return g
}

// TestParallelCallsLayoutValidates: the layout of several calls per turn
// validates, reads through the wire codecs (JSON and binary) unchanged, and
// counts one step per turn, not per model segment.
func TestParallelCallsLayoutValidates(t *testing.T) {
	g := parallelGroup(t)
	if err := g.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	data, err := os.ReadFile("testdata/parallel-calls-group.json")
	if err != nil {
		t.Fatal(err)
	}
	viaWire, err := wire.DecodeGroup(data)
	if err != nil {
		t.Fatalf("wire.DecodeGroup: %v", err)
	}
	if !reflect.DeepEqual(viaWire, g) {
		t.Error("wire.DecodeGroup differs from encoding/json's decoding")
	}
	bin, err := wire.AppendGroupBinary(nil, &g)
	if err != nil {
		t.Fatalf("AppendGroupBinary: %v", err)
	}
	back, err := wire.DecodeGroupBinary(bin)
	if err != nil {
		t.Fatalf("DecodeGroupBinary: %v", err)
	}
	if err := back.Validate(); err != nil {
		t.Fatalf("binary round trip: %v", err)
	}
	for i, want := range []struct {
		models, steps int
		stepOf        []int
	}{
		{3, 2, []int{0, 0, 0, 0, 1}},
		{3, 2, []int{0, 0, 1, 1}},
	} {
		tr := &g.Trajectories[i]
		if got := tr.ModelSegments(); got != want.models {
			t.Errorf("%s: ModelSegments() = %d, want %d", tr.ID, got, want.models)
		}
		if got := tr.Steps(); got != want.steps {
			t.Errorf("%s: Steps() = %d, want %d", tr.ID, got, want.steps)
		}
		if got := tr.StepOf(nil); !slices.Equal(got, want.stepOf) {
			t.Errorf("%s: StepOf = %v, want %v", tr.ID, got, want.stepOf)
		}
	}
	// One call per turn: a step is a model segment, as before.
	one := sample()
	if one.Steps() != one.ModelSegments() || !slices.Equal(one.StepOf(nil), []int{0, 0, 1}) {
		t.Errorf("one call per turn: Steps %d ModelSegments %d StepOf %v", one.Steps(), one.ModelSegments(), one.StepOf(nil))
	}
}

// TestParallelCallsLayoutRefusals: each way of breaking the layout is
// refused, naming the field where it breaks.
func TestParallelCallsLayoutRefusals(t *testing.T) {
	cases := []struct {
		name   string
		sample int // which trajectory of parallelGroup; -1: sample()
		break_ func(*traj.Trajectory)
		field  string
	}{
		{"turns decrease", 0, func(t *traj.Trajectory) {
			for i := range 4 {
				t.Segments[i].Turn = 1
			}
			t.Segments[4].Turn = 0
		}, "segments[4].turn"},
		{"a turn begins with a tool segment", -1, func(t *traj.Trajectory) {
			t.Segments[0].Call = nil
			t.Segments[1].Turn = 1
		}, "segments[1].kind"},
		{"model segment after the turn's tool segments", 0, func(t *traj.Trajectory) { t.Segments[4].Turn = 0 }, "segments[4].turn"},
		{"model segment without a call before another of its turn", 0, func(t *traj.Trajectory) { t.Segments[0].Call = nil }, "segments[0].call"},
		{"last model segment of a two-segment turn without a call", 0, func(t *traj.Trajectory) {
			t.Segments[1].Call, t.Segments[3].Call = nil, nil
		}, "segments[1].call"},
		{"more tool segments than calls", -1, func(t *traj.Trajectory) {
			s := &t.Segments[2]
			s.Kind, s.Turn, s.Result = traj.SegmentTool, 0, &traj.ToolResult{OK: true}
			for j := s.Start; j < s.End; j++ {
				t.LossMask[j], t.Logprobs[j] = 0, 0
			}
		}, "segments[2]"},
		{"tool segment repeats another call than the one it answers", 0, func(t *traj.Trajectory) {
			t.Segments[2].Call, t.Segments[3].Call = t.Segments[3].Call, t.Segments[2].Call
		}, "segments[2].call"},
		{"call unanswered in a turn that is not the last", 0, func(t *traj.Trajectory) {
			t.Segments[2].End = t.Segments[3].End
			t.Segments = slices.Delete(t.Segments, 3, 4)
		}, "segments[1].call"},
		{"one step reward per model segment", 0, func(t *traj.Trajectory) { t.StepRewards = []float64{-0.1, -0.1, 1.4} }, "step_rewards"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tr traj.Trajectory
			if c.sample < 0 {
				tr = sample()
			} else {
				tr = parallelGroup(t).Trajectories[c.sample]
			}
			if err := tr.Validate(); err != nil {
				t.Fatalf("before breaking: %v", err)
			}
			c.break_(&tr)
			err := tr.Validate()
			var fe *traj.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *traj.FieldError", err)
			}
			if fe.Field != c.field {
				t.Errorf("field = %q, want %q (error: %v)", fe.Field, c.field, err)
			}
			t.Log(err)
		})
	}
}

// TestPairCalls: each call is paired with the tool segment of its rank in
// its turn, unanswered calls with none, and a result in a turn whose model
// segment recorded no call (older data) is a call of its own.
func TestPairCalls(t *testing.T) {
	g := parallelGroup(t)
	for i, want := range [][]traj.CallRef{
		{{Step: 0, Model: 0, Tool: 2}, {Step: 0, Model: 1, Tool: 3}},
		{{Step: 0, Model: 0, Tool: 1}, {Step: 1, Model: 2, Tool: -1}, {Step: 1, Model: 3, Tool: -1}},
	} {
		if got := traj.PairCalls(nil, g.Trajectories[i].Segments); !slices.Equal(got, want) {
			t.Errorf("sample %d: %v, want %v", i, got, want)
		}
	}
	legacy := sample()
	legacy.Segments[0].Call = nil
	if got := traj.PairCalls(nil, legacy.Segments); !slices.Equal(got, []traj.CallRef{{Step: 0, Model: -1, Tool: 1}}) {
		t.Errorf("call-less turn: %v", got)
	}
}
