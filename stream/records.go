package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	goredis "github.com/redis/go-redis/v9"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// LearnerGroup is the default consumer group of toolrl's learner on the
// advantages stream (each trainer has a group of its own).
const LearnerGroup = "learner"

// FieldFormat names an advantages-stream entry's record format; an entry
// without it is JSON (the record field holds the whole record).
const FieldFormat = "format"

// RecordFormatBinary is the binary record format (wire.AppendRecordHeader):
// the record field holds the record's JSON without its per-token arrays, and
// each array is a field of its own named as in the JSON
// (wire.RecordArrayFields; v1 and v2 entries use their schema's names,
// wire.OldRecordArrayFields), little-endian (int32 input_ids, uint8
// response_mask, float32 rollout_log_probs, ref_log_prob, advantages and kl;
// ref_log_prob and kl empty when the record has none).
const RecordFormatBinary = "binary-le/v1"

// binaryFormatValue is RecordFormatBinary as a field value, shared (fields
// are only read).
var binaryFormatValue = []byte(RecordFormatBinary)

// RecordFields are the fields of an advantages-stream entry for record r with
// JSON data (wire.AppendRecord): the JSON format. The id and schema values
// view r's strings: the fields are read only.
func RecordFields(r *traj.AdvantageRecord, data []byte) []Field {
	return []Field{
		{Name: FieldTrajectoryID, Value: stringBytes(r.TrajectoryID)},
		{Name: FieldGroupID, Value: stringBytes(r.GroupID)},
		{Name: FieldPolicyVersion, Value: strconv.AppendInt(nil, r.PolicyVersion, 10)},
		{Name: FieldSchema, Value: stringBytes(r.Schema)},
		{Name: FieldRecord, Value: data},
	}
}

// stringBytes views s as bytes, not a copy: they must not be written.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// BinaryRecordFields are the fields of an advantages-stream entry for record
// r in RecordFormatBinary. The array fields may be views of r's arrays
// (wire.BinaryArraysOf): r must not change while the fields are in use.
func BinaryRecordFields(r *traj.AdvantageRecord) ([]Field, error) {
	fields, _, err := AppendBinaryRecordFields(make([]Field, 0, BinaryRecordFieldCount), make([]byte, 0, 1024), r)
	return fields, err
}

// BinaryRecordFieldCount is the number of fields of a binary record entry
// (BinaryRecordFields).
const BinaryRecordFieldCount = 12

// AppendBinaryRecordFields appends BinaryRecordFields(r) to fields, writing
// r's header and policy version at the end of buf, and returns both: the
// records of a group share one fields slice and one buffer. The values
// written view buf's bytes as they are now; buf may be appended to after
// (a reallocation leaves them in the old array) but its written bytes must
// not change while the fields are in use.
func AppendBinaryRecordFields(fields []Field, buf []byte, r *traj.AdvantageRecord) ([]Field, []byte, error) {
	start := len(buf)
	buf, err := wire.AppendRecordHeader(buf, r)
	if err != nil {
		return fields, buf[:start], err
	}
	header := buf[start:len(buf):len(buf)]
	start = len(buf)
	buf = strconv.AppendInt(buf, r.PolicyVersion, 10)
	version := buf[start:len(buf):len(buf)]
	arrays, err := wire.BinaryArraysOf(r)
	if err != nil {
		return fields, buf, err
	}
	names := wire.RecordArrayFieldsOf(r.Schema) // a v1 or v2 record keeps its schema's names
	fields = append(fields,
		Field{Name: FieldTrajectoryID, Value: stringBytes(r.TrajectoryID)},
		Field{Name: FieldGroupID, Value: stringBytes(r.GroupID)},
		Field{Name: FieldPolicyVersion, Value: version},
		Field{Name: FieldSchema, Value: stringBytes(r.Schema)},
		Field{Name: FieldRecord, Value: header},
		Field{Name: FieldFormat, Value: binaryFormatValue},
		Field{Name: names[0], Value: arrays.InputIDs}, Field{Name: names[1], Value: arrays.LossMask},
		Field{Name: names[2], Value: arrays.OldLogprobs}, Field{Name: names[3], Value: arrays.RefLogprobs},
		Field{Name: names[4], Value: arrays.Advantages}, Field{Name: names[5], Value: arrays.KL})
	return fields, buf, nil
}

// DecodeRecordEntry decodes and validates the advantage record of an
// advantages-stream entry, in either format, and checks it against the
// entry's trajectory_id field.
func DecodeRecordEntry(m Message) (*traj.AdvantageRecord, error) {
	payload, ok := m.Values[FieldRecord].(string)
	if !ok {
		return nil, fmt.Errorf("entry %s: no %q field", m.ID, FieldRecord)
	}
	var r traj.AdvantageRecord
	var err error
	switch format, _ := m.Values[FieldFormat].(string); format {
	case "":
		r, err = wire.DecodeRecord([]byte(payload))
	case RecordFormatBinary:
		var arrays wire.BinaryArrays
		schema, _ := m.Values[FieldSchema].(string)
		names := wire.RecordArrayFieldsOf(schema)
		for i, b := range []*[]byte{&arrays.InputIDs, &arrays.LossMask, &arrays.OldLogprobs, &arrays.RefLogprobs, &arrays.Advantages, &arrays.KL} {
			v, ok := m.Values[names[i]].(string)
			if !ok {
				return nil, fmt.Errorf("entry %s: no %q field (record format %s, schema %s)", m.ID, names[i], format, schema)
			}
			*b = unsafe.Slice(unsafe.StringData(v), len(v)) // read only: DecodeRecordBinary copies out
		}
		r, err = wire.DecodeRecordBinary(unsafe.Slice(unsafe.StringData(payload), len(payload)), arrays)
	default:
		return nil, fmt.Errorf("entry %s: field %s is %q, want none (JSON) or %q", m.ID, FieldFormat, format, RecordFormatBinary)
	}
	if err != nil {
		return nil, fmt.Errorf("entry %s: %w", m.ID, err)
	}
	if id, _ := m.Values[FieldTrajectoryID].(string); id != r.TrajectoryID {
		return nil, fmt.Errorf("entry %s: field %s is %q but the record's id is %q", m.ID, FieldTrajectoryID, id, r.TrajectoryID)
	}
	return &r, nil
}

// ReadOwnPending returns up to Count entries that were delivered to this
// consumer (by name) and never acknowledged, from the start of its pending
// list after the id after (use "0" first, then the last id returned). A
// consumer restarted under the same name finds what its previous run read
// but did not finish. An empty result means the list is exhausted. An entry
// deleted (trimmed) while pending comes back with nil Values; Deliveries is
// not counted (0).
func (c *Consumer) ReadOwnPending(ctx context.Context, after string) ([]Message, error) {
	streams, err := c.client.XReadGroup(ctx, &goredis.XReadGroupArgs{
		Group: c.opts.Group, Consumer: c.opts.Consumer, Streams: []string{c.opts.Stream, after}, Count: c.opts.Count,
	}).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		if isNoGroup(err) {
			return nil, c.EnsureGroup(ctx)
		}
		return nil, fmt.Errorf("redis: read own pending of %s in %s group %s: %w", c.opts.Consumer, c.opts.Stream, c.opts.Group, err)
	}
	var out []Message
	for _, s := range streams {
		for _, m := range s.Messages {
			out = append(out, Message{ID: m.ID, Values: m.Values})
		}
	}
	return out, nil
}
