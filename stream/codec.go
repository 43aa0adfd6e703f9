package stream

import (
	"fmt"

	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// Fields of a groups-stream entry (toolrl:{job}:groups).
const (
	FieldGroupID       = "group_id"       // traj.Group.GroupID
	FieldPolicyVersion = "policy_version" // decimal
	FieldSchema        = "schema"         // the group's schema: traj.TrajectorySchema (v2), or v1 for old data
	FieldGroup         = "group"          // the JSON of traj.Group (wire.EncodeGroup)
)

// Fields of an advantages-stream entry (toolrl:{job}:advantages).
const (
	FieldRecord       = "record"        // the JSON of traj.AdvantageRecord (wire.EncodeRecord)
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

// DecodeGroupEntry decodes the group of a groups-stream entry and checks it
// against the entry's group_id field.
func DecodeGroupEntry(m Message) (*traj.Group, error) {
	payload, ok := m.Values[FieldGroup].(string)
	if !ok {
		return nil, fmt.Errorf("entry %s: no %q field", m.ID, FieldGroup)
	}
	g, err := wire.DecodeGroup([]byte(payload))
	if err != nil {
		return nil, fmt.Errorf("entry %s: %w", m.ID, err)
	}
	if id, _ := m.Values[FieldGroupID].(string); id != g.GroupID {
		return nil, fmt.Errorf("entry %s: field %s is %q but the group's id is %q", m.ID, FieldGroupID, id, g.GroupID)
	}
	return &g, nil
}
