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
	FieldSchema        = "schema"         // the group's schema: traj.TrajectorySchema (v3), or an older version for old data
	FieldGroup         = "group"          // the JSON of traj.Group (wire.EncodeGroup), or the binary group format
	// FieldFormat (records.go), when present, is GroupFormatBinary: the group
	// field holds the binary group format (wire.AppendGroupBinary).
)

// GroupFormatBinary is the format field's value on a groups-stream entry
// whose group field holds the binary group format (wire.AppendGroupBinary:
// the group's JSON without its per-token arrays, then the arrays
// little-endian). An entry without the field holds JSON.
const GroupFormatBinary = "toolrl.group.bin/v1"

// The values of ProducerOptions.GroupFormat (and of a Redis URL's
// group_format= option, GroupFormatOf).
const (
	GroupFormatJSON       = "json"
	GroupFormatBinaryName = "binary"
)

// CheckGroupFormat checks a groups-stream entry's format field against its
// payload: no field (JSON) for a payload that is not in the binary group
// format, GroupFormatBinary for one that is (wire.IsGroupBinary). An error
// names the field.
func CheckGroupFormat(m Message, payload []byte) error {
	format, _ := m.Values[FieldFormat].(string)
	switch binary := wire.IsGroupBinary(payload); {
	case format == "" && binary:
		return fmt.Errorf("field %s is absent (JSON) but the %s field is in the binary group format", FieldFormat, FieldGroup)
	case format == GroupFormatBinary && !binary:
		return fmt.Errorf("field %s is %q but the %s field does not open with %q", FieldFormat, format, FieldGroup, wire.GroupBinaryMagic)
	case format != "" && format != GroupFormatBinary:
		return fmt.Errorf("field %s is %q, want none (JSON) or %q", FieldFormat, format, GroupFormatBinary)
	}
	return nil
}

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

// DecodeGroupEntry decodes the group of a groups-stream entry, in either
// format (CheckGroupFormat), and checks it against the entry's group_id
// field. The group does not share memory with the entry.
func DecodeGroupEntry(m Message) (*traj.Group, error) {
	payload, ok := m.Values[FieldGroup].(string)
	if !ok {
		return nil, fmt.Errorf("entry %s: no %q field", m.ID, FieldGroup)
	}
	data := []byte(payload) // a copy: a binary group's arrays view it
	if err := CheckGroupFormat(m, data); err != nil {
		return nil, fmt.Errorf("entry %s: %w", m.ID, err)
	}
	g, _, err := wire.DecodeGroupPayload(data)
	if err != nil {
		return nil, fmt.Errorf("entry %s: %w", m.ID, err)
	}
	if id, _ := m.Values[FieldGroupID].(string); id != g.GroupID {
		return nil, fmt.Errorf("entry %s: field %s is %q but the group's id is %q", m.ID, FieldGroupID, id, g.GroupID)
	}
	return g, nil
}
