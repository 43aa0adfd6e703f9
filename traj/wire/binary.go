package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/toolrl/toolrl/traj"
)

// The binary record format: an advantage record as its JSON without the
// per-token arrays (AppendRecordHeader) plus each array as little-endian
// bytes (BinaryArraysOf): input_ids int32, response_mask uint8,
// rollout_log_probs, ref_log_prob, advantages and kl float32, so a trainer
// reads them without parsing (numpy.frombuffer(b, "<f4")). The service
// writes it with --record-format binary: formatting every KL and advantage
// as JSON costs more than the math.

// RecordArrayFields are the JSON names of the per-token arrays that the
// binary format carries outside the record's JSON, in record order (schema
// v3's names; OldRecordArrayFields are v1's and v2's).
var RecordArrayFields = []string{"input_ids", "response_mask", "rollout_log_probs", "ref_log_prob", "advantages", "kl"}

// OldRecordArrayFields are RecordArrayFields as v1 and v2 records name them.
var OldRecordArrayFields = []string{"input_ids", "loss_mask", "old_logprobs", "ref_logprobs", "advantages", "kl"}

// RecordArrayFieldsOf returns the array names of a record of the given
// schema: OldRecordArrayFields for v1 and v2, RecordArrayFields otherwise.
func RecordArrayFieldsOf(schema string) []string {
	if schema == traj.AdvantageSchemaV2 || schema == traj.AdvantageSchemaV1 {
		return OldRecordArrayFields
	}
	return RecordArrayFields
}

// BinaryArrays are an advantage record's per-token arrays as little-endian
// bytes, one field per name of RecordArrayFields (RefLogprobs and KL empty
// when the record has none).
type BinaryArrays struct {
	InputIDs, LossMask, OldLogprobs, RefLogprobs, Advantages, KL []byte
}

// Fields returns the arrays in RecordArrayFields' order.
func (a *BinaryArrays) Fields() [][]byte {
	return [][]byte{a.InputIDs, a.LossMask, a.OldLogprobs, a.RefLogprobs, a.Advantages, a.KL}
}

// AppendRecordHeader appends the JSON of r without its per-token arrays
// (RecordArrayFields): the record of the binary format. Like AppendRecord, it
// refuses non-finite values, naming the record and field.
func AppendRecordHeader(b []byte, r *traj.AdvantageRecord) ([]byte, error) {
	return appendRecord(b, r, nil, false)
}

// BinaryArraysOf returns r's per-token arrays as little-endian bytes. On a
// little-endian machine they are views of r's arrays, not copies: r's arrays
// must not change while the result is in use. It refuses a non-finite float,
// naming the record, array and index.
func BinaryArraysOf(r *traj.AdvantageRecord) (BinaryArrays, error) {
	// Array by array, not a loop over a table of pointers into a: that made
	// a escape, an allocation per record.
	for _, f := range [...]struct {
		name   string
		values []float32
	}{{"rollout_log_probs", r.OldLogprobs}, {"ref_log_prob", r.RefLogprobs}, {"advantages", r.Advantages}, {"kl", r.KL}} {
		if i := traj.FirstNonFinite(f.values); i >= 0 {
			return BinaryArrays{}, fmt.Errorf("encode advantage record %s %s[%d]: unsupported value %v", r.TrajectoryID, f.name, i, f.values[i])
		}
	}
	return BinaryArrays{InputIDs: leBytes(r.InputIDs), LossMask: []byte(r.LossMask),
		OldLogprobs: leBytes(r.OldLogprobs), RefLogprobs: leBytes(r.RefLogprobs),
		Advantages: leBytes(r.Advantages), KL: leBytes(r.KL)}, nil
}

// leBytes is vs as little-endian 4-byte values: a view of vs on a
// little-endian machine, else a copy.
func leBytes[T int32 | float32](vs []T) []byte {
	if hostLittleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vs))), 4*len(vs))
	}
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, *(*uint32)(unsafe.Pointer(&v)))
	}
	return b
}

// hostLittleEndian is whether this machine stores numbers little-endian, so
// that its arrays are the format's bytes as they are.
var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// DecodeRecordBinary decodes a record in the binary format: header is its
// JSON without the per-token arrays (a header that has one is refused) and
// arrays their bytes. It validates the result as DecodeRecord does; an error
// names the record and the field. The result keeps no reference to header or
// arrays (they may be views of strings).
func DecodeRecordBinary(header []byte, arrays BinaryArrays) (traj.AdvantageRecord, error) {
	s := &scanner{b: header}
	var r traj.AdvantageRecord
	err := s.record(&r)
	if err == nil {
		err = s.end()
	}
	if err == nil && (r.InputIDs != nil || r.LossMask != nil || r.OldLogprobs != nil || r.RefLogprobs != nil || r.Advantages != nil || r.KL != nil) {
		err = fmt.Errorf("a per-token array in the JSON of a binary record (they are fields of their own: %v)", RecordArrayFields)
	}
	if err == nil {
		names := RecordArrayFieldsOf(r.Schema)
		r.LossMask = make(traj.Mask, len(arrays.LossMask))
		copy(r.LossMask, arrays.LossMask)
		for _, f := range []struct {
			name string
			in   []byte
			out  *[]float32
		}{{names[2], arrays.OldLogprobs, &r.OldLogprobs}, {names[3], arrays.RefLogprobs, &r.RefLogprobs},
			{names[4], arrays.Advantages, &r.Advantages}, {names[5], arrays.KL, &r.KL}} {
			if *f.out, err = fromLE[float32](f.name, f.in); err != nil {
				break
			}
		}
		if err == nil {
			r.InputIDs, err = fromLE[int32](names[0], arrays.InputIDs)
		}
	}
	if err != nil {
		if r.TrajectoryID != "" {
			return traj.AdvantageRecord{}, fmt.Errorf("decode advantage record %s: %w", r.TrajectoryID, err)
		}
		return traj.AdvantageRecord{}, fmt.Errorf("decode advantage record: %w", err)
	}
	if len(r.RefLogprobs) == 0 {
		r.RefLogprobs = nil // omitted, as in the JSON
	}
	if len(r.KL) == 0 {
		r.KL = nil
	}
	if err := r.Validate(); err != nil {
		return traj.AdvantageRecord{}, fmt.Errorf("decode advantage record: %w", err)
	}
	return r, nil
}

// fromLE reads little-endian 4-byte values; a length that is not a multiple
// of 4 or a non-finite float is an error naming the array.
func fromLE[T int32 | float32](name string, b []byte) ([]T, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes, not a multiple of 4", name, len(b))
	}
	out := make([]T, len(b)/4)
	for i := range out {
		u := binary.LittleEndian.Uint32(b[4*i:])
		out[i] = *(*T)(unsafe.Pointer(&u))
		if f, ok := any(out[i]).(float32); ok && (math.IsNaN(float64(f)) || math.IsInf(float64(f), 0)) {
			return nil, fmt.Errorf("%s[%d]: %v is not finite", name, i, f)
		}
	}
	return out, nil
}
