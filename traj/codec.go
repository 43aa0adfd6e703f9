package traj

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// MarshalTrajectory encodes t as one line of JSON (no trailing newline). It does
// not validate; call Validate first when the input is untrusted.
func MarshalTrajectory(t *Trajectory) ([]byte, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode trajectory %s: %w", t.ID, err)
	}
	return data, nil
}

// UnmarshalTrajectory decodes one JSON trajectory strictly (unknown fields are
// an error, so that a schema drift is caught, not silently dropped) and
// validates it.
func UnmarshalTrajectory(data []byte) (Trajectory, error) {
	var t Trajectory
	if err := decodeStrict(data, &t); err != nil {
		return Trajectory{}, fmt.Errorf("decode trajectory: %w", err)
	}
	if err := t.Validate(); err != nil {
		return Trajectory{}, fmt.Errorf("decode trajectory: %w", err)
	}
	return t, nil
}

// MarshalGroup encodes a group as one line of JSON.
func MarshalGroup(g *Group) ([]byte, error) {
	data, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("encode group %s: %w", g.GroupID, err)
	}
	return data, nil
}

// UnmarshalGroup decodes and validates one JSON group.
func UnmarshalGroup(data []byte) (Group, error) {
	var g Group
	if err := decodeStrict(data, &g); err != nil {
		return Group{}, fmt.Errorf("decode group: %w", err)
	}
	if err := g.Validate(); err != nil {
		return Group{}, fmt.Errorf("decode group: %w", err)
	}
	return g, nil
}

// MarshalAdvantage encodes an advantage record as one line of JSON.
func MarshalAdvantage(r *AdvantageRecord) ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode advantage record %s: %w", r.TrajectoryID, err)
	}
	return data, nil
}

// UnmarshalAdvantage decodes and validates one JSON advantage record.
func UnmarshalAdvantage(data []byte) (AdvantageRecord, error) {
	var r AdvantageRecord
	if err := decodeStrict(data, &r); err != nil {
		return AdvantageRecord{}, fmt.Errorf("decode advantage record: %w", err)
	}
	if err := r.Validate(); err != nil {
		return AdvantageRecord{}, fmt.Errorf("decode advantage record: %w", err)
	}
	return r, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// NewGroup builds a group from its trajectories, taking the group's identity
// from the first one. It does not validate.
func NewGroup(trajectories []Trajectory) Group {
	g := Group{Schema: TrajectorySchema, Trajectories: trajectories}
	if len(trajectories) > 0 {
		first := trajectories[0]
		g.GroupID, g.JobID, g.PromptID, g.Iteration, g.PolicyVersion = first.GroupID, first.JobID, first.PromptID, first.Iteration, first.PolicyVersion
	}
	return g
}

// TrajectoryID is the deterministic trajectory id: GroupID(job, promptID,
// iteration) + "/" + sampleIndex, e.g. "job/p7/3" in iteration 0 and
// "job/p7@2/3" in iteration 2.
func TrajectoryID(job, promptID string, iteration, sampleIndex int) string {
	return GroupID(job, promptID, iteration) + "/" + strconv.Itoa(sampleIndex)
}

// GroupID is the deterministic id of the group of promptID sampled in
// iteration of job: "job/prompt" in iteration 0 (a plain rollout, and every
// id written before iterations existed), "job/prompt@k" in iteration k > 0.
// It is what idempotency keys on (sinks, resume, the Redis written and done
// sets), so each (job, prompt, iteration) is one group, written once. A
// prompt id containing '@' could make two of these equal; the orchestrator
// refuses such ids.
func GroupID(job, promptID string, iteration int) string {
	if iteration == 0 {
		return job + "/" + promptID
	}
	return job + "/" + promptID + "@" + strconv.Itoa(iteration)
}
