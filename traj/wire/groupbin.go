package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/toolrl/toolrl/traj"
)

// The binary group format (version 1): a group's JSON without its
// trajectories' per-token arrays, followed by the arrays as little-endian
// bytes, so that the advantage service reads them without parsing a number.
// All integers are little-endian; every section starts on a 4-byte boundary.
//
//	magic            4 bytes  "TRLG" (GroupBinaryMagic)
//	version          uint32   1 (GroupBinaryVersion)
//	header_len       uint32   bytes of the header
//	trajectories     uint32   count, = len(header's trajectories)
//	header           the JSON of the group (EncodeGroup) with every
//	                 trajectory's input_ids, response_mask and
//	                 rollout_log_probs null and ref_log_prob absent;
//	                 zero-padded to a multiple of 4
//	then per trajectory, in the header's order:
//	  tokens_len, mask_len, logprobs_len, ref_len   4 × uint32 (values)
//	  input_ids          int32 × tokens_len
//	  response_mask      uint8 × mask_len, zero-padded to a multiple of 4
//	  rollout_log_probs  float32 × logprobs_len
//	  ref_log_prob       float32 × ref_len (0: the trajectory has none)
//
// The header's schema may be v3 or older (its JSON is read as DecodeGroup
// reads it); the layout is the same for every schema.
//
// The payload ends with the last array: trailing bytes are refused.

// GroupBinaryMagic opens a payload in the binary group format; a JSON
// payload opens with '{' (or white space), so the first byte tells which.
const GroupBinaryMagic = "TRLG"

// GroupBinaryVersion is the binary group format's version this codec writes
// and reads.
const GroupBinaryVersion = 1

// IsGroupBinary reports whether data opens with GroupBinaryMagic.
func IsGroupBinary(data []byte) bool {
	return bytes.HasPrefix(data, []byte(GroupBinaryMagic))
}

// AppendGroupBinary appends g in the binary group format to b. Like
// EncodeGroup it does not validate, except what the format needs: every
// array length must fit a uint32.
func AppendGroupBinary(b []byte, g *traj.Group) ([]byte, error) {
	header := *g
	header.Trajectories = make([]traj.Trajectory, len(g.Trajectories))
	for i := range g.Trajectories {
		t := g.Trajectories[i]
		t.Tokens, t.LossMask, t.Logprobs, t.RefLogprobs = nil, nil, nil, nil
		header.Trajectories[i] = t
	}
	hdr, err := EncodeGroup(&header)
	if err != nil {
		return nil, err
	}
	if uint64(len(hdr)) > maxUint32 || uint64(len(g.Trajectories)) > maxUint32 {
		return nil, fmt.Errorf("encode group %s: too large for the binary format", g.GroupID)
	}
	b = append(b, GroupBinaryMagic...)
	b = binary.LittleEndian.AppendUint32(b, GroupBinaryVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(hdr)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(g.Trajectories)))
	b = append(b, hdr...)
	b = pad4(b)
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		for _, n := range []int{len(t.Tokens), len(t.LossMask), len(t.Logprobs), len(t.RefLogprobs)} {
			if uint64(n) > maxUint32 {
				return nil, fmt.Errorf("encode group %s: trajectories[%d] (%s): an array of %d values is too long for the binary format", g.GroupID, i, t.ID, n)
			}
			b = binary.LittleEndian.AppendUint32(b, uint32(n))
		}
		b = append(b, leBytes(t.Tokens)...)
		b = append(b, t.LossMask...)
		b = pad4(b)
		b = append(b, leBytes(t.Logprobs)...)
		b = append(b, leBytes(t.RefLogprobs)...)
	}
	return b, nil
}

const maxUint32 = 1<<32 - 1

// pad4 appends zero bytes up to a multiple of 4.
func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// DecodeGroupBinary decodes a group in the binary group format strictly
// (magic, version, every length against the bytes left, zero padding, no
// trailing bytes, the header as DecodeGroup reads JSON) and validates it
// (traj.Group.Validate). An error names the group's id when it was read, and
// the field at fault.
//
// On a little-endian machine the per-token arrays are views of data, not
// copies, wherever data's bytes are 4-byte aligned (loss_mask always): data
// must not change while the group is in use, and the arrays must not be
// written to.
func DecodeGroupBinary(data []byte) (*traj.Group, error) {
	g, err := decodeGroupBinary(data)
	if err != nil {
		if g != nil && g.GroupID != "" {
			return nil, fmt.Errorf("decode group %s: binary: %w", g.GroupID, err)
		}
		return nil, fmt.Errorf("decode group: binary: %w", err)
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("decode group: %w", err)
	}
	return g, nil
}

// decodeGroupBinary decodes without validating; g is returned with an error
// once its header was read, for the error to name it.
func decodeGroupBinary(data []byte) (*traj.Group, error) {
	r := &binReader{b: data}
	if !IsGroupBinary(data) {
		return nil, fmt.Errorf("magic: want %q", GroupBinaryMagic)
	}
	r.i = len(GroupBinaryMagic)
	version, err := r.uint32("version")
	if err != nil {
		return nil, err
	}
	if version != GroupBinaryVersion {
		return nil, fmt.Errorf("version: %d, this reader knows %d", version, GroupBinaryVersion)
	}
	hlen, err := r.uint32("header_len")
	if err != nil {
		return nil, err
	}
	count, err := r.uint32("trajectories")
	if err != nil {
		return nil, err
	}
	hdr, err := r.take("header", uint64(hlen))
	if err != nil {
		return nil, err
	}
	if err := r.padding("header"); err != nil {
		return nil, err
	}
	g, raws, err := decodeGroupJSON(hdr, int(min(count, 1024)))
	if err != nil {
		return g, fmt.Errorf("header: %w", err)
	}
	if uint64(len(g.Trajectories)) != uint64(count) {
		return g, fmt.Errorf("trajectories: %d in the prefix but %d in the header", count, len(g.Trajectories))
	}
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		if raws[i].Tokens != nil || raws[i].LossMask != nil || raws[i].Logprobs != nil || raws[i].RefLogprobs != nil {
			return g, fmt.Errorf("header: trajectories[%d] (%s): a per-token array in the header (input_ids, response_mask, rollout_log_probs and ref_log_prob follow it)", i, t.ID)
		}
		if err := r.trajectory(t); err != nil {
			return g, fmt.Errorf("trajectories[%d] (%s): %w", i, t.ID, err)
		}
	}
	if r.i != len(r.b) {
		return g, fmt.Errorf("%d trailing bytes after the last trajectory", len(r.b)-r.i)
	}
	return g, nil
}

// binReader reads the binary group format's sections; its errors name the
// field and say how many bytes were needed and left.
type binReader struct {
	b []byte
	i int
}

func (r *binReader) uint32(field string) (uint32, error) {
	b, err := r.take(field, 4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

// take returns the next n bytes.
func (r *binReader) take(field string, n uint64) ([]byte, error) {
	if left := uint64(len(r.b) - r.i); n > left {
		return nil, fmt.Errorf("%s: needs %d bytes, %d left", field, n, left)
	}
	b := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return b, nil
}

// padding skips the zero bytes up to the next multiple of 4.
func (r *binReader) padding(field string) error {
	n := uint64((4 - r.i%4) % 4)
	if left := uint64(len(r.b) - r.i); n > left {
		return fmt.Errorf("%s padding: needs %d bytes, %d left", field, n, left) // take's message
	}
	b := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	for _, c := range b {
		if c != 0 {
			return fmt.Errorf("%s padding: byte %d is not 0", field, c)
		}
	}
	return nil
}

// trajectory reads one trajectory's lengths and arrays into t.
func (r *binReader) trajectory(t *traj.Trajectory) error {
	var lens [4]uint32
	for k, name := range []string{"tokens_len", "mask_len", "logprobs_len", "ref_len"} {
		var err error
		if lens[k], err = r.uint32(name); err != nil {
			return err
		}
	}
	var err error
	if t.Tokens, err = binArray[int32](r, "input_ids", lens[0]); err != nil {
		return err
	}
	mask, err := r.take("response_mask", uint64(lens[1]))
	if err != nil {
		return err
	}
	t.LossMask = traj.Mask(mask[:len(mask):len(mask)])
	if err := r.padding("response_mask"); err != nil {
		return err
	}
	if t.Logprobs, err = binArray[float32](r, "rollout_log_probs", lens[2]); err != nil {
		return err
	}
	if t.RefLogprobs, err = binArray[float32](r, "ref_log_prob", lens[3]); err != nil {
		return err
	}
	if len(t.RefLogprobs) == 0 {
		t.RefLogprobs = nil // none, as when the JSON omits it
	}
	return nil
}

// binArray reads n little-endian 4-byte values: a view of the bytes on a
// little-endian machine when they are 4-byte aligned, else a copy. Values
// are checked by Validate (a non-finite float is refused there).
func binArray[T int32 | float32](r *binReader, field string, n uint32) ([]T, error) {
	b, err := r.take(field, 4*uint64(n))
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return []T{}, nil
	}
	if hostLittleEndian && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 == 0 {
		return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n), nil
	}
	out := make([]T, n)
	for i := range out {
		u := binary.LittleEndian.Uint32(b[4*i:])
		out[i] = *(*T)(unsafe.Pointer(&u))
	}
	return out, nil
}

// DecodeGroupPayload decodes a groups-stream payload in either format: the
// binary group format when data opens with GroupBinaryMagic
// (DecodeGroupBinary; its arrays view data), else JSON (DecodeGroupArrays).
// The Arrays, the raw JSON of each trajectory's per-token arrays, are empty
// for a binary payload (AppendRecord then formats the values).
func DecodeGroupPayload(data []byte) (*traj.Group, []Arrays, error) {
	if IsGroupBinary(data) {
		g, err := DecodeGroupBinary(data)
		if err != nil {
			return nil, nil, err
		}
		return g, make([]Arrays, len(g.Trajectories)), nil
	}
	return DecodeGroupArrays(data)
}
