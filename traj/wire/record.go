package wire

import (
	encjson "encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/toolrl/toolrl/traj"
)

// EncodeRecord is the JSON of an advantage record, one line (no trailing
// newline): the advantages stream's record field and a JSONL line. It does
// not validate.
func EncodeRecord(r *traj.AdvantageRecord) ([]byte, error) {
	return AppendRecord(nil, r, nil)
}

// AppendRecord appends the JSON of r to b. Where raw has an array (the raw
// JSON of the trajectory the record was computed from, DecodeGroupArrays),
// it is copied as is instead of formatting r's values: the service's records
// repeat four of their trajectory's arrays. It follows encoding/json's rules
// (field order, omitempty, float formatting, string escaping), so the result
// is what encoding/json writes for r when raw is nil or holds what
// EncodeGroup wrote (a test checks both).
func AppendRecord(b []byte, r *traj.AdvantageRecord, raw *Arrays) ([]byte, error) {
	if raw == nil {
		raw = &Arrays{}
	}
	return appendRecord(b, r, raw, true)
}

// appendRecord writes r's JSON; without arrays it leaves out the per-token
// arrays (RecordArrayFields), which the binary format carries outside.
func appendRecord(b []byte, r *traj.AdvantageRecord, raw *Arrays, arrays bool) ([]byte, error) {
	if !arrays {
		raw = &Arrays{Tokens: []byte{}, LossMask: []byte{}, Logprobs: []byte{}, RefLogprobs: []byte{}}
	}
	for _, a := range []struct {
		name   string
		values []float32
		raw    []byte
	}{{"rollout_log_probs", r.OldLogprobs, raw.Logprobs}, {"ref_log_prob", r.RefLogprobs, raw.RefLogprobs},
		{"advantages", r.Advantages, nil}, {"kl", r.KL, nil}} {
		if a.raw != nil || !arrays {
			continue
		}
		for i, v := range a.values {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("encode advantage record %s %s[%d]: unsupported value %v", r.TrajectoryID, a.name, i, v)
			}
		}
	}
	b = append(b, `{"schema":`...)
	b = appendString(b, r.Schema)
	b = append(b, `,"trajectory_id":`...)
	b = appendString(b, r.TrajectoryID)
	b = append(b, `,"group_id":`...)
	b = appendString(b, r.GroupID)
	if r.Iteration != 0 {
		b = append(b, `,"iteration":`...)
		b = strconv.AppendInt(b, int64(r.Iteration), 10)
	}
	b = append(b, `,"sample_index":`...)
	b = strconv.AppendInt(b, int64(r.SampleIndex), 10)
	b = append(b, `,"policy_version":`...)
	b = strconv.AppendInt(b, r.PolicyVersion, 10)
	if r.Temperature != nil {
		b = append(b, `,"temperature":`...)
		var err error
		if b, err = appendFloat(b, *r.Temperature, 64); err != nil {
			return nil, fmt.Errorf("encode advantage record %s temperature: %w", r.TrajectoryID, err)
		}
	}
	if arrays {
		b = append(b, `,"input_ids":`...)
		b = appendRaw(b, raw.Tokens, r.InputIDs, appendInts[int32])
	}
	b = append(b, `,"prompt_len":`...)
	b = strconv.AppendInt(b, int64(r.PromptLen), 10)
	if raw.LossMask == nil {
		for _, v := range r.LossMask {
			if v > 9 {
				return nil, fmt.Errorf("encode advantage record %s: response_mask value %d is not 0 or 1", r.TrajectoryID, v)
			}
		}
	}
	if arrays {
		b = append(b, `,"response_mask":`...)
		b = appendRaw(b, raw.LossMask, r.LossMask, appendInts[uint8])
		b = append(b, `,"rollout_log_probs":`...)
		b = appendRaw(b, raw.Logprobs, r.OldLogprobs, appendFloat32s)
		if len(r.RefLogprobs) > 0 {
			b = append(b, `,"ref_log_prob":`...)
			b = appendRaw(b, raw.RefLogprobs, r.RefLogprobs, appendFloat32s)
		}
		b = append(b, `,"advantages":`...)
		b = appendFloat32s(b, r.Advantages)
		if len(r.KL) > 0 {
			b = append(b, `,"kl":`...)
			b = appendFloat32s(b, r.KL)
		}
	}
	if r.KLEstimator != "" {
		b = append(b, `,"kl_estimator":`...)
		b = appendString(b, r.KLEstimator)
	}
	b = append(b, `,"reward":`...)
	b, err := appendFloat(b, r.Reward.Total, 64)
	if err != nil {
		return nil, fmt.Errorf("encode advantage record %s reward: %w", r.TrajectoryID, err)
	}
	if len(r.Reward.Parts) > 0 {
		// encoding/json writes map keys sorted.
		names := make([]string, 0, len(r.Reward.Parts))
		for name := range r.Reward.Parts {
			names = append(names, name)
		}
		slices.Sort(names)
		b = append(b, `,"reward_parts":{`...)
		for i, name := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, name)
			b = append(b, ':')
			if b, err = appendFloat(b, r.Reward.Parts[name], 64); err != nil {
				return nil, fmt.Errorf("encode advantage record %s reward_parts.%s: %w", r.TrajectoryID, name, err)
			}
		}
		b = append(b, '}')
	}
	if len(r.StepRewards) > 0 {
		b = append(b, `,"step_rewards":[`...)
		for i, v := range r.StepRewards {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendFloat(b, v, 64); err != nil {
				return nil, fmt.Errorf("encode advantage record %s step_rewards[%d]: %w", r.TrajectoryID, i, err)
			}
		}
		b = append(b, ']')
	}
	if len(r.Segments) > 0 {
		b = append(b, `,"segments":`...)
		if b, err = appendSegments(b, r.Segments); err != nil {
			return nil, fmt.Errorf("encode advantage record %s: %w", r.TrajectoryID, err)
		}
	}
	b = append(b, `,"mode":`...)
	b = appendString(b, r.Mode)
	b = append(b, `,"estimator":`...)
	b = appendString(b, r.Estimator)
	if r.ZeroVariance {
		b = append(b, `,"zero_variance":true`...)
	}
	if r.Stale {
		b = append(b, `,"stale":true`...)
	}
	return append(b, '}'), nil
}

// appendSegments writes spans (kind, turn, start, end) directly and falls
// back to encoding/json for a segment with text, call or result.
func appendSegments(b []byte, segs []traj.Segment) ([]byte, error) {
	b = append(b, '[')
	for i := range segs {
		s := &segs[i]
		if i > 0 {
			b = append(b, ',')
		}
		if s.Text != "" || s.Call != nil || s.Result != nil {
			data, err := encjson.Marshal(s)
			if err != nil {
				return nil, fmt.Errorf("segments[%d]: %w", i, err)
			}
			b = append(b, data...)
			continue
		}
		b = append(b, `{"kind":`...)
		b = appendString(b, string(s.Kind))
		b = append(b, `,"turn":`...)
		b = strconv.AppendInt(b, int64(s.Turn), 10)
		b = append(b, `,"start":`...)
		b = strconv.AppendInt(b, int64(s.Start), 10)
		b = append(b, `,"end":`...)
		b = strconv.AppendInt(b, int64(s.End), 10)
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendRaw appends raw when it is set, else vs formatted by format.
func appendRaw[T any](b, raw []byte, vs []T, format func([]byte, []T) []byte) []byte {
	if raw != nil {
		return append(b, raw...)
	}
	return format(b, vs)
}

// appendInts writes an integer array (nil: null, as encoding/json): token
// ids, and a 0/1 mask as numbers (traj.Mask's MarshalJSON).
func appendInts[T int32 | uint8](b []byte, vs []T) []byte {
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return append(b, ']')
}

// appendFloat32s writes a float32 array, formatting each distinct run of
// equal values once (advantages are constant over a step). The values must
// be finite (the caller checks).
func appendFloat32s(b []byte, vs []float32) []byte {
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	var last float32
	var lastStart, lastEnd int = -1, -1
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		if lastStart >= 0 && math.Float32bits(v) == math.Float32bits(last) {
			b = append(b, b[lastStart:lastEnd]...)
			continue
		}
		start := len(b)
		b, _ = appendFloat(b, float64(v), 32)
		last, lastStart, lastEnd = v, start, len(b)
	}
	return append(b, ']')
}

// appendFloat formats f exactly as encoding/json does for a float of the
// given bit size.
func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("unsupported value %v", f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendString writes s as a JSON string; strings with characters that
// encoding/json escapes specially go through it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			data, _ := encjson.Marshal(s)
			return append(b, data...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON marks the bytes encoding/json writes as they are in a string:
// printable ASCII but the quote, the backslash and its HTML escapes.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// recordFields are the JSON names of traj.AdvantageRecord, in its order (a
// test checks them against the type).
var recordFields = []string{"schema", "trajectory_id", "group_id", "iteration", "sample_index", "policy_version",
	"temperature", "input_ids", "prompt_len", "response_mask", "rollout_log_probs", "ref_log_prob", "advantages", "kl",
	"kl_estimator", "reward", "reward_parts", "step_rewards", "segments", "mode", "estimator", "zero_variance", "stale"}

// recordKeys are the keys a record may have: recordFields and the v1/v2
// names of the fields v3 renamed (see trajectoryKeys).
var recordKeys = append(slices.Clip(recordFields), "loss_mask", "old_logprobs", "ref_logprobs")

// DecodeRecord decodes one JSON advantage record strictly and validates it
// (traj.AdvantageRecord.Validate: schema v2 and v1 are accepted). An error
// names the record's trajectory id when it was read, and the field at fault.
func DecodeRecord(data []byte) (traj.AdvantageRecord, error) {
	s := &scanner{b: data}
	var r traj.AdvantageRecord
	err := s.record(&r)
	if err == nil {
		err = s.end()
	}
	if err != nil {
		if r.TrajectoryID != "" {
			return traj.AdvantageRecord{}, fmt.Errorf("decode advantage record %s: %w", r.TrajectoryID, err)
		}
		return traj.AdvantageRecord{}, fmt.Errorf("decode advantage record: %w", err)
	}
	if err := r.Validate(); err != nil {
		return traj.AdvantageRecord{}, fmt.Errorf("decode advantage record: %w", err)
	}
	return r, nil
}

// record decodes one advantage record object into r.
func (s *scanner) record(r *traj.AdvantageRecord) error {
	var sp spelling
	err := s.object(recordKeys, func(key string) error {
		var err error
		switch key {
		case "schema":
			r.Schema, err = s.str()
		case "trajectory_id":
			r.TrajectoryID, err = s.str()
		case "group_id":
			r.GroupID, err = s.str()
		case "iteration":
			r.Iteration, err = s.int()
		case "sample_index":
			r.SampleIndex, err = s.int()
		case "policy_version":
			r.PolicyVersion, err = s.int64()
		case "temperature":
			r.Temperature, err = s.float64Ptr()
		case "input_ids":
			r.InputIDs, _, err = s.int32s()
		case "prompt_len":
			r.PromptLen, err = s.int()
		case "response_mask", "loss_mask":
			sp.saw(key == "loss_mask", renamedMask)
			r.LossMask, _, err = s.uint8s()
		case "rollout_log_probs", "old_logprobs":
			sp.saw(key == "old_logprobs", renamedLogprobs)
			r.OldLogprobs, _, err = s.float32s()
		case "ref_log_prob", "ref_logprobs":
			sp.saw(key == "ref_logprobs", renamedRef)
			r.RefLogprobs, _, err = s.float32s()
		case "advantages":
			r.Advantages, _, err = s.float32s()
		case "kl":
			r.KL, _, err = s.float32s()
		case "kl_estimator":
			r.KLEstimator, err = s.str()
		case "reward":
			err = s.reward(&r.Reward, &sp)
		case "reward_parts":
			sp.saw(false, renamedParts)
			err = s.rewardParts(&r.Reward)
		case "step_rewards":
			r.StepRewards, err = s.float64s()
		case "segments":
			r.Segments, err = s.segments()
		case "mode":
			r.Mode, err = s.str()
		case "estimator":
			r.Estimator, err = s.str()
		case "zero_variance":
			r.ZeroVariance, err = s.bool(r.ZeroVariance)
		case "stale":
			r.Stale, err = s.bool(r.Stale)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return sp.check(r.Schema, traj.AdvantageSchema, traj.AdvantageNames(traj.AdvantageSchemaV2), traj.AdvantageNames(traj.AdvantageSchema))
}
