package stream

import (
	"bytes"
	"fmt"

	json "github.com/goccy/go-json"
	"github.com/toolrl/toolrl/traj"
)

// Fields of a groups-stream entry (toolrl:{job}:groups).
const (
	FieldGroupID       = "group_id"       // traj.Group.GroupID
	FieldPolicyVersion = "policy_version" // decimal
	FieldSchema        = "schema"         // the group's schema: traj.TrajectorySchema (v2), or v1 for old data
	FieldGroup         = "group"          // the JSON of traj.Group
)

// Fields of an advantages-stream entry (toolrl:{job}:advantages).
const (
	FieldRecord       = "record"        // the JSON of traj.AdvantageRecord
	FieldTrajectoryID = "trajectory_id" // traj.AdvantageRecord.TrajectoryID
	// group_id, policy_version and schema as on the groups stream.
)

// Fields of a dead-letter entry (toolrl:{job}:dead); the original entry's
// fields follow, each renamed "field:<name>".
const (
	FieldReason       = "reason"
	FieldSourceStream = "source_stream"
	FieldSourceID     = "source_id"
	FieldSourceGroup  = "source_group"
	FieldConsumer     = "consumer"
	FieldDeliveries   = "deliveries"
)

// EncodeGroup is the JSON of g as the groups stream carries it: the same
// bytes as traj.MarshalGroup, produced by a faster encoder.
func EncodeGroup(g *traj.Group) ([]byte, error) {
	data, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("redis: encode group %s: %w", g.GroupID, err)
	}
	return data, nil
}

// DecodeGroup decodes a group strictly (unknown fields are an error, as in
// traj.UnmarshalGroup) and validates it; schema v2 and v1 groups are accepted
// (traj.Group.Validate).
func DecodeGroup(data []byte) (*traj.Group, error) {
	var g traj.Group
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("decode group: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decode group: trailing data after the JSON value")
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("decode group: %w", err)
	}
	return &g, nil
}

// DecodeGroupEntry decodes the group of a groups-stream entry and checks it
// against the entry's group_id field.
func DecodeGroupEntry(m Message) (*traj.Group, error) {
	payload, ok := m.Values[FieldGroup].(string)
	if !ok {
		return nil, fmt.Errorf("entry %s: no %q field", m.ID, FieldGroup)
	}
	g, err := DecodeGroup([]byte(payload))
	if err != nil {
		return nil, fmt.Errorf("entry %s: %w", m.ID, err)
	}
	if id, _ := m.Values[FieldGroupID].(string); id != g.GroupID {
		return nil, fmt.Errorf("entry %s: field %s is %q but the group's id is %q", m.ID, FieldGroupID, id, g.GroupID)
	}
	return g, nil
}

// EncodeRecord is the JSON of an advantage record as the advantages stream
// carries it: the same bytes as traj.MarshalAdvantage.
func EncodeRecord(r *traj.AdvantageRecord) ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("redis: encode advantage record %s: %w", r.TrajectoryID, err)
	}
	return data, nil
}
