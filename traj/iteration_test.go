package traj_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// iterationGroup is a valid group of two trajectories of job/p1 sampled in
// iteration k.
func iterationGroup(k int) traj.Group {
	return *trajtest.Group(trajtest.Options{Prompt: "p1", Iteration: k, Size: 2, PolicyVersion: 3, Temperature: trajtest.Temperature(0.7)})
}

func TestIterationSchemaV2(t *testing.T) {
	// Iteration 0 is omitted on the wire (plain rollouts write what they
	// wrote before), k > 0 written, and both round trip.
	g0 := iterationGroup(0)
	data, err := wire.EncodeGroup(&g0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "iteration") {
		t.Errorf("iteration 0 written: %s", data)
	}
	g := iterationGroup(2)
	if g.Iteration != 2 || g.GroupID != "job/p1@2" {
		t.Fatalf("NewGroup took iteration %d, id %q from its trajectories", g.Iteration, g.GroupID)
	}
	data, err = wire.EncodeGroup(&g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"prompt_id":"p1","iteration":2,"policy_version"`) ||
		!strings.Contains(string(data), `"prompt_id":"p1","iteration":2,"group_id":"job/p1@2"`) {
		t.Errorf("iteration not written where expected: %s", data)
	}
	back, err := wire.DecodeGroup(data)
	if err != nil || !reflect.DeepEqual(back, g) {
		t.Fatalf("group round trip: %v", err)
	}

	// A group's trajectories share its iteration.
	var fe *traj.FieldError
	bad := iterationGroup(2)
	bad.Trajectories[1].Iteration = 1
	if err := bad.Validate(); !errors.As(err, &fe) || fe.Field != "trajectories[1].iteration" {
		t.Errorf("member of another iteration: %v, want a trajectories[1].iteration field error", err)
	}
	bad = iterationGroup(2)
	bad.Iteration = 0
	if err := bad.Validate(); !errors.As(err, &fe) || fe.Field != "trajectories[0].iteration" {
		t.Errorf("group iteration disagrees with its members: %v", err)
	}
	bad = iterationGroup(0)
	bad.Iteration = -1
	if err := bad.Validate(); !errors.As(err, &fe) || fe.Field != "iteration" {
		t.Errorf("negative group iteration: %v", err)
	}
}

func TestAdvantageRecordIteration(t *testing.T) {
	tr := iterationGroup(3).Trajectories[1]
	r := trajtest.Record(tr, 0)
	data, err := wire.EncodeRecord(&r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"trajectory_id":"job/p1@3/1","group_id":"job/p1@3","iteration":3,"sample_index":1`) {
		t.Errorf("iteration not written after group_id: %s", data)
	}
	if back, err := wire.DecodeRecord(data); err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip: %v", err)
	}
	var fe *traj.FieldError
	r.Iteration = -2
	if err := r.Validate(); !errors.As(err, &fe) || fe.Field != "iteration" || fe.Record != tr.ID {
		t.Errorf("negative iteration: %v", err)
	}
	r.Iteration, r.Schema, r.Temperature = 1, traj.AdvantageSchemaV1, nil
	if err := r.Validate(); !errors.As(err, &fe) || fe.Field != "iteration" {
		t.Errorf("v1 record with iteration: %v", err)
	}
	r.Iteration = 0
	if err := r.Validate(); err != nil {
		t.Errorf("v1 record: %v", err)
	}
}
