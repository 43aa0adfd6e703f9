package advantage

import (
	encjson "encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"github.com/toolrl/toolrl/traj"
)

// The service's lean codec. A group's per-token arrays are most of its bytes,
// and an advantage record repeats four of them (input_ids, loss_mask,
// old_logprobs, ref_logprobs). The service therefore decodes a group in one
// pass that keeps those arrays' raw JSON (wirescan.go), and writes each
// record by splicing the raw arrays back in, so that only advantages and KL
// are formatted. For input written by traj's
// encoder the output is byte for byte traj.MarshalAdvantage's (a test checks
// this); otherwise it is the same JSON value.

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat32 parses s, one JSON number, exactly as strconv.ParseFloat(s,
// 32) would, or reports false (not a JSON number, or not on the fast path:
// strconv must decide).
func fastFloat32(s []byte) (float32, bool) {
	end, v, fast, err := scanFloat32(s, 0)
	return v, err == nil && fast && end == len(s)
}

// scanFloat32 reads the JSON number (strict grammar) that starts at b[i] and
// returns where it ends and, when fast, its value as a float32. fast false
// means the caller must parse b[i:end] with strconv. The fast path takes the
// common decimal forms (-d.ddd, -d.ddde-x): with a mantissa m below 2^53 and
// |exponent| ≤ 22, m·10^e in float64 is correctly rounded (Clinger 1990, the
// fast path strconv also takes). Rounding that float64 to float32 rounds once
// more, which differs from rounding the decimal directly only when the
// float64 lands exactly on a float32 halfway point: those go to strconv, as
// do subnormals and overflows.
func scanFloat32(b []byte, i int) (end int, v float32, fast bool, err error) {
	start := i
	neg := false
	if i < len(b) && b[i] == '-' {
		neg, i = true, i+1
	}
	if i >= len(b) {
		return i, 0, false, errUnexpectedEnd
	}
	var m uint64
	digits, e10, trunc := 0, 0, false
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		for ; i < len(b) && isDigit(b[i]); i++ {
			if digits < 19 {
				m, digits = m*10+uint64(b[i]-'0'), digits+1
			} else {
				trunc, e10 = true, e10+1
			}
		}
	default:
		return i, 0, false, fmt.Errorf("want a number at byte %d", start)
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDigit(b[i]) {
			return i, 0, false, fmt.Errorf("bad number at byte %d", start)
		}
		for ; i < len(b) && isDigit(b[i]); i++ {
			switch {
			case m == 0 && b[i] == '0':
				e10--
			case digits < 19:
				m, digits, e10 = m*10+uint64(b[i]-'0'), digits+1, e10-1
			default:
				trunc = true
			}
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		eneg := false
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg, i = b[i] == '-', i+1
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, 0, false, fmt.Errorf("bad number at byte %d", start)
		}
		x := 0
		for ; i < len(b) && isDigit(b[i]); i++ {
			if x < 100000 {
				x = x*10 + int(b[i]-'0')
			}
		}
		if eneg {
			x = -x
		}
		e10 += x
	}
	if trunc {
		return i, 0, false, nil
	}
	if m == 0 {
		if neg {
			return i, float32(math.Copysign(0, -1)), true, nil
		}
		return i, 0, true, nil
	}
	if m >= 1<<53 {
		return i, 0, false, nil
	}
	f := float64(m)
	switch {
	case e10 > 0 && e10 <= 22:
		f *= pow10[e10]
	case e10 < 0 && e10 >= -22:
		f /= pow10[-e10]
	case e10 != 0:
		return i, 0, false, nil
	}
	if f < 0x1p-126 || f > math.MaxFloat32 {
		return i, 0, false, nil
	}
	if math.Float64bits(f)&(1<<29-1) == 1<<28 {
		return i, 0, false, nil // exactly halfway between two float32s
	}
	if neg {
		f = -f
	}
	return i, float32(f), true, nil
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
	b = append(b, `,"reward":{"total":`...)
	b, err := appendFloat(b, r.Reward.Total, 64)
	if err != nil {
		return nil, fmt.Errorf("encode advantage record %s reward.total: %w", r.TrajectoryID, err)
	}
	if len(r.Reward.Parts) > 0 {
		// encoding/json writes map keys sorted.
		names := make([]string, 0, len(r.Reward.Parts))
		for name := range r.Reward.Parts {
			names = append(names, name)
		}
		slices.Sort(names)
		b = append(b, `,"parts":{`...)
		for i, name := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, name)
			b = append(b, ':')
			if b, err = appendFloat(b, r.Reward.Parts[name], 64); err != nil {
				return nil, fmt.Errorf("encode advantage record %s reward.parts.%s: %w", r.TrajectoryID, name, err)
			}
		}
		b = append(b, '}')
	}
	b = append(b, '}')
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
