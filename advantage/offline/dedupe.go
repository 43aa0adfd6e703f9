package offline

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"unsafe"

	"github.com/toolrl/toolrl/traj"
)

// dedupe remembers every trajectory id an offline input has yielded, with a
// 64-bit hash of the trajectory's content, so that a repeated identical
// trajectory (a group written twice, files concatenated) is skipped instead
// of giving duplicate records, and a repeated id with other content is an
// error. It holds about 100 bytes per trajectory. It is owned by one
// goroutine.
type dedupe struct {
	seed maphash.Seed
	seen map[string]uint64
}

func newDedupe() *dedupe {
	return &dedupe{seed: maphash.MakeSeed(), seen: map[string]uint64{}}
}

// check reports whether t repeats a trajectory already seen (skip it); it
// returns an error when t's id was seen with different content.
func (d *dedupe) check(t *traj.Trajectory) (repeat bool, err error) {
	h := d.hash(t)
	prev, ok := d.seen[t.ID]
	if !ok {
		d.seen[t.ID] = h
		return false, nil
	}
	if prev != h {
		return false, fmt.Errorf("trajectory %s of group %s appears twice with different content", t.ID, t.GroupID)
	}
	return true, nil
}

// hash digests every field of t (ref_log_prob as read, before any scoring).
func (d *dedupe) hash(t *traj.Trajectory) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	var b [8]byte
	num := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	str := func(s string) { // length-prefixed, so that fields cannot run together
		num(uint64(len(s)))
		h.WriteString(s)
	}
	f64 := func(v float64) { num(math.Float64bits(v)) }
	str(t.Schema)
	str(t.ID)
	str(t.JobID)
	str(t.PromptID)
	str(t.GroupID)
	num(uint64(t.Iteration))
	num(uint64(t.GroupSize))
	num(uint64(t.SampleIndex))
	num(uint64(t.PolicyVersion))
	num(t.Seed)
	if t.Temperature != nil {
		num(1)
		f64(*t.Temperature)
	} else {
		num(0)
	}
	str(t.Model.Name)
	str(t.Model.Hash)
	num(uint64(t.PromptLen))
	num(uint64(len(t.Tokens)))
	h.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(t.Tokens))), 4*len(t.Tokens)))
	num(uint64(len(t.LossMask)))
	h.Write(t.LossMask)
	num(uint64(len(t.Logprobs)))
	h.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(t.Logprobs))), 4*len(t.Logprobs)))
	if t.RefLogprobs != nil {
		num(uint64(len(t.RefLogprobs)) + 1)
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(t.RefLogprobs))), 4*len(t.RefLogprobs)))
	} else {
		num(0)
	}
	num(uint64(len(t.Segments)))
	for _, s := range t.Segments {
		str(string(s.Kind))
		num(uint64(s.Turn))
		num(uint64(s.Start))
		num(uint64(s.End))
		str(s.Text)
		if c := s.Call; c != nil {
			num(1)
			str(c.Name)
			str(string(c.Arguments))
			str(c.Raw)
			str(c.ParseError)
		} else {
			num(0)
		}
		if r := s.Result; r != nil {
			num(2)
			if r.OK {
				num(1)
			} else {
				num(0)
			}
			str(r.ErrorClass)
			str(r.Error)
			str(r.Content)
			f64(r.LatencyMS)
			if r.Truncated {
				num(1)
			} else {
				num(0)
			}
			str(r.Fault)
		} else {
			num(0)
		}
	}
	str(string(t.FinishReason))
	f64(t.Reward.Total)
	names := make([]string, 0, len(t.Reward.Parts))
	for name := range t.Reward.Parts {
		names = append(names, name)
	}
	slices.Sort(names)
	num(uint64(len(names)))
	for _, name := range names {
		str(name)
		f64(t.Reward.Parts[name])
	}
	num(uint64(len(t.StepRewards)))
	for _, r := range t.StepRewards {
		f64(r)
	}
	str(t.Answer)
	str(string(t.Meta))
	return h.Sum64()
}
