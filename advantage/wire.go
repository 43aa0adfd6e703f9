package advantage

import (
	"bytes"
	encjson "encoding/json"
	"fmt"
	"math"
	"strconv"
	"unsafe"

	json "github.com/goccy/go-json"

	"github.com/toolrl/toolrl/traj"
)

// The service's lean codec. A group's per-token arrays are most of its bytes,
// and an advantage record repeats four of them (input_ids, loss_mask,
// old_logprobs, ref_logprobs). The service therefore decodes a group into
// wire structs that keep those arrays' raw JSON, parses the numbers with a
// tight loop, and writes each record by splicing the raw arrays back in, so
// that only advantages and KL are formatted. For input written by traj's
// encoder the output is byte for byte traj.MarshalAdvantage's (a test checks
// this); otherwise it is the same JSON value.

// wireTrajectory mirrors traj.Trajectory field for field (a test checks the
// JSON names and order), with the per-token arrays kept raw.
type wireTrajectory struct {
	Schema        string             `json:"schema"`
	ID            string             `json:"id"`
	JobID         string             `json:"job_id"`
	PromptID      string             `json:"prompt_id"`
	GroupID       string             `json:"group_id"`
	GroupSize     int                `json:"group_size"`
	SampleIndex   int                `json:"sample_index"`
	PolicyVersion int64              `json:"policy_version"`
	Seed          uint64             `json:"seed"`
	Model         traj.ModelRef      `json:"model"`
	Tokens        json.RawMessage    `json:"tokens"`
	PromptLen     int                `json:"prompt_len"`
	LossMask      json.RawMessage    `json:"loss_mask"`
	Logprobs      json.RawMessage    `json:"logprobs"`
	RefLogprobs   json.RawMessage    `json:"ref_logprobs,omitempty"`
	Segments      []traj.Segment     `json:"segments"`
	FinishReason  traj.FinishReason  `json:"finish_reason"`
	Reward        traj.Reward        `json:"reward"`
	StepRewards   []float64          `json:"step_rewards,omitempty"`
	Answer        string             `json:"answer,omitempty"`
	Meta          encjson.RawMessage `json:"meta,omitempty"`
}

// wireGroup mirrors traj.Group.
type wireGroup struct {
	Schema        string           `json:"schema"`
	GroupID       string           `json:"group_id"`
	JobID         string           `json:"job_id"`
	PromptID      string           `json:"prompt_id"`
	PolicyVersion int64            `json:"policy_version"`
	Trajectories  []wireTrajectory `json:"trajectories"`
}

// disallowUnknownFields sets go-json's DisallowUnknownFieldsOption flag
// (1<<4 in internal/decoder/option.go of v0.12.0), which the public API offers
// only on the stream Decoder. TestWireDecodeRejects fails if a go-json upgrade
// moves the flag.
func disallowUnknownFields(o *json.DecodeOption) { o.Flags |= 1 << 4 }

// rawArrays are the raw JSON of one trajectory's per-token arrays.
type rawArrays struct {
	tokens, lossMask, logprobs, refLogprobs []byte
}

// decodeWireGroup decodes a group strictly (unknown fields are an error),
// validates it, and returns it with each trajectory's raw arrays.
func decodeWireGroup(data []byte) (*traj.Group, []rawArrays, error) {
	var wg wireGroup
	// Unmarshal with unknown fields rejected is ~3x faster than the strict
	// stream Decoder on a 60 KB group; trailing data is rejected by Unmarshal.
	if err := json.UnmarshalWithOption(data, &wg, disallowUnknownFields); err != nil {
		return nil, nil, fmt.Errorf("decode group: %w", err)
	}
	g := &traj.Group{Schema: wg.Schema, GroupID: wg.GroupID, JobID: wg.JobID, PromptID: wg.PromptID,
		PolicyVersion: wg.PolicyVersion, Trajectories: make([]traj.Trajectory, len(wg.Trajectories))}
	raws := make([]rawArrays, len(wg.Trajectories))
	for i := range wg.Trajectories {
		w := &wg.Trajectories[i]
		t := &g.Trajectories[i]
		*t = traj.Trajectory{
			Schema: w.Schema, ID: w.ID, JobID: w.JobID, PromptID: w.PromptID, GroupID: w.GroupID,
			GroupSize: w.GroupSize, SampleIndex: w.SampleIndex, PolicyVersion: w.PolicyVersion, Seed: w.Seed,
			Model: w.Model, PromptLen: w.PromptLen, Segments: w.Segments, FinishReason: w.FinishReason,
			Reward: w.Reward, StepRewards: w.StepRewards, Answer: w.Answer, Meta: w.Meta,
		}
		var err error
		if t.Tokens, err = parseInt32s(w.Tokens); err != nil {
			return nil, nil, fmt.Errorf("decode group: trajectories[%d].tokens: %w", i, err)
		}
		var mask []uint8
		if mask, err = parseUint8s(w.LossMask); err != nil {
			return nil, nil, fmt.Errorf("decode group: trajectories[%d].loss_mask: %w", i, err)
		}
		t.LossMask = mask
		if t.Logprobs, err = parseFloat32s(w.Logprobs); err != nil {
			return nil, nil, fmt.Errorf("decode group: trajectories[%d].logprobs: %w", i, err)
		}
		if t.RefLogprobs, err = parseFloat32s(w.RefLogprobs); err != nil {
			return nil, nil, fmt.Errorf("decode group: trajectories[%d].ref_logprobs: %w", i, err)
		}
		raws[i] = rawArrays{tokens: w.Tokens, lossMask: w.LossMask, logprobs: w.Logprobs, refLogprobs: w.RefLogprobs}
		if t.RefLogprobs == nil {
			raws[i].refLogprobs = nil
		}
	}
	if err := g.Validate(); err != nil {
		return nil, nil, fmt.Errorf("decode group: %w", err)
	}
	return g, raws, nil
}

// arrayElems calls f on each element's bytes of a JSON array of numbers;
// null or an empty input is an absent array (nil, reported by ok false).
func arrayElems(raw []byte, f func(elem []byte) error) (ok bool, err error) {
	i := skipSpace(raw, 0)
	if i == len(raw) || bytes.Equal(raw[i:], []byte("null")) {
		return false, nil
	}
	if raw[i] != '[' {
		return false, fmt.Errorf("not an array")
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return true, nil
	}
	for {
		start := i
		for i < len(raw) && raw[i] != ',' && raw[i] != ']' && raw[i] != ' ' && raw[i] != '\n' && raw[i] != '\t' && raw[i] != '\r' {
			i++
		}
		if err := f(raw[start:i]); err != nil {
			return true, err
		}
		i = skipSpace(raw, i)
		if i == len(raw) {
			return true, fmt.Errorf("unterminated array")
		}
		if raw[i] == ']' {
			return true, nil
		}
		i = skipSpace(raw, i+1) // the comma
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

func parseInt32s(raw []byte) ([]int32, error) {
	out := make([]int32, 0, len(raw)/4)
	ok, err := arrayElems(raw, func(e []byte) error {
		// Token ids are short non-negative decimals: parse those inline.
		if n := len(e); n > 0 && n <= 9 && (e[0] != '0' || n == 1) {
			v := int32(0)
			for _, c := range e {
				if c < '0' || c > '9' {
					goto slow
				}
				v = v*10 + int32(c-'0')
			}
			out = append(out, v)
			return nil
		}
	slow:
		v, err := strconv.ParseInt(unsafeString(e), 10, 32)
		if err != nil {
			return err
		}
		out = append(out, int32(v))
		return nil
	})
	if !ok {
		return nil, err
	}
	return out, err
}

func parseUint8s(raw []byte) ([]uint8, error) {
	out := make([]uint8, 0, len(raw)/2)
	ok, err := arrayElems(raw, func(e []byte) error {
		if len(e) == 1 && e[0] >= '0' && e[0] <= '9' {
			out = append(out, e[0]-'0')
			return nil
		}
		v, err := strconv.ParseUint(unsafeString(e), 10, 8)
		if err != nil {
			return err
		}
		out = append(out, uint8(v))
		return nil
	})
	if !ok {
		return nil, err
	}
	return out, err
}

func parseFloat32s(raw []byte) ([]float32, error) {
	out := make([]float32, 0, len(raw)/8)
	ok, err := arrayElems(raw, func(e []byte) error {
		if v, ok := fastFloat32(e); ok {
			out = append(out, v)
			return nil
		}
		v, err := strconv.ParseFloat(unsafeString(e), 32)
		if err != nil {
			return err
		}
		out = append(out, float32(v))
		return nil
	})
	if !ok {
		return nil, err
	}
	return out, err
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat32 parses the common decimal forms (-d.ddd, -d.ddde-x) of a
// float32 exactly, or reports false for strconv to handle. With a mantissa m
// below 2^53 and |exponent| ≤ 22, m·10^e in float64 is correctly rounded
// (Clinger 1990, the fast path strconv also takes). Rounding that float64 to
// float32 rounds once more, which differs from rounding the decimal directly
// only when the float64 lands exactly on a float32 halfway point: those go
// to strconv, as do subnormals and overflows.
func fastFloat32(s []byte) (float32, bool) {
	i, neg := 0, false
	if i < len(s) && s[i] == '-' {
		neg, i = true, i+1
	}
	var m uint64
	digits, e10, seen := 0, 0, false
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		seen = true
		if m == 0 && s[i] == '0' {
			continue
		}
		if digits++; digits > 19 {
			return 0, false
		}
		m = m*10 + uint64(s[i]-'0')
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			seen = true
			e10--
			if m == 0 && s[i] == '0' {
				continue
			}
			if digits++; digits > 19 {
				return 0, false
			}
			m = m*10 + uint64(s[i]-'0')
		}
	}
	if !seen {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			eneg, i = s[i] == '-', i+1
		}
		x, n := 0, 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9' && n < 4; i, n = i+1, n+1 {
			x = x*10 + int(s[i]-'0')
		}
		if n == 0 {
			return 0, false
		}
		if eneg {
			x = -x
		}
		e10 += x
	}
	if i != len(s) {
		return 0, false
	}
	if m == 0 {
		if neg {
			return float32(math.Copysign(0, -1)), true
		}
		return 0, true
	}
	if m >= 1<<53 {
		return 0, false
	}
	f := float64(m)
	switch {
	case e10 > 0 && e10 <= 22:
		f *= pow10[e10]
	case e10 < 0 && e10 >= -22:
		f /= pow10[-e10]
	case e10 != 0:
		return 0, false
	}
	if f < 0x1p-126 || f > math.MaxFloat32 {
		return 0, false
	}
	if math.Float64bits(f)&(1<<29-1) == 1<<28 {
		return 0, false // exactly halfway between two float32s
	}
	if neg {
		f = -f
	}
	return float32(f), true
}

// unsafeString views b as a string without copying; the string must not
// outlive b's next modification (the parsers only read it).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// appendRecord appends the JSON of r, splicing raw for the arrays r shares
// with its trajectory. It follows encoding/json's rules (field order,
// omitempty, float formatting, string escaping) so that the result equals
// traj.MarshalAdvantage's for canonical input.
func appendRecord(b []byte, r *traj.AdvantageRecord, raw *rawArrays) ([]byte, error) {
	b = append(b, `{"schema":`...)
	b = appendString(b, r.Schema)
	b = append(b, `,"trajectory_id":`...)
	b = appendString(b, r.TrajectoryID)
	b = append(b, `,"group_id":`...)
	b = appendString(b, r.GroupID)
	b = append(b, `,"sample_index":`...)
	b = strconv.AppendInt(b, int64(r.SampleIndex), 10)
	b = append(b, `,"policy_version":`...)
	b = strconv.AppendInt(b, r.PolicyVersion, 10)
	b = append(b, `,"input_ids":`...)
	b = append(b, raw.tokens...)
	b = append(b, `,"prompt_len":`...)
	b = strconv.AppendInt(b, int64(r.PromptLen), 10)
	b = append(b, `,"loss_mask":`...)
	b = append(b, raw.lossMask...)
	b = append(b, `,"old_logprobs":`...)
	b = append(b, raw.logprobs...)
	if len(r.RefLogprobs) > 0 {
		b = append(b, `,"ref_logprobs":`...)
		b = append(b, raw.refLogprobs...)
	}
	b = append(b, `,"advantages":`...)
	b = appendFloat32s(b, r.Advantages)
	if len(r.KL) > 0 {
		b = append(b, `,"kl":`...)
		b = appendFloat32s(b, r.KL)
	}
	if r.KLEstimator != "" {
		b = append(b, `,"kl_estimator":`...)
		b = appendString(b, r.KLEstimator)
	}
	b = append(b, `,"reward":`...)
	reward, err := encjson.Marshal(r.Reward)
	if err != nil {
		return nil, fmt.Errorf("encode advantage record %s reward: %w", r.TrajectoryID, err)
	}
	b = append(b, reward...)
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

// appendFloat32s writes a float32 array, formatting each distinct run of
// equal values once (advantages are constant over a step).
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
		b, _ = appendFloat(b, float64(v), 32) // values are finite: Compute's output
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
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			data, _ := encjson.Marshal(s)
			return append(b, data...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
