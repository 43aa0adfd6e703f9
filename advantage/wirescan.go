package advantage

import (
	"bytes"
	encjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/toolrl/toolrl/traj"
)

// The service's group decoder: one pass over the entry's JSON that parses
// the per-token arrays in place (strict JSON number grammar, the fast
// float32 path of wire.go) and keeps their raw bytes for the records, and
// reads every other value directly as well (raw JSON values such as meta and
// call arguments are checked with encoding/json.Valid). Unknown fields are an
// error at every level, keys match case-insensitively as in encoding/json,
// and the result is validated (traj.Group.Validate), so a corrupt entry is
// dead-lettered with the field at fault.

// The JSON names the decoder knows for each traj type, in traj's order (a
// test checks them against the types: a field added there must be decoded
// here, or the service would reject every group carrying it).
var (
	modelFields   = []string{"name", "hash"}
	segmentFields = []string{"kind", "turn", "start", "end", "text", "call", "result"}
	callFields    = []string{"name", "arguments", "raw", "parse_error"}
	resultFields  = []string{"ok", "error_class", "error", "content", "latency_ms", "truncated"}
	rewardFields  = []string{"total", "parts"}

	groupFields      = []string{"schema", "group_id", "job_id", "prompt_id", "iteration", "policy_version", "trajectories"}
	trajectoryFields = []string{"schema", "id", "job_id", "prompt_id", "iteration", "group_id", "group_size", "sample_index",
		"policy_version", "seed", "temperature", "model", "tokens", "prompt_len", "loss_mask", "logprobs", "ref_logprobs",
		"segments", "finish_reason", "reward", "step_rewards", "answer", "meta"}
)

// rawArrays are the raw JSON of one trajectory's per-token arrays (views into
// the decoded entry).
type rawArrays struct {
	tokens, lossMask, logprobs, refLogprobs []byte
}

// decodeWireGroup decodes a group strictly (unknown fields are an error),
// validates it, and returns it with each trajectory's raw arrays, which view
// data: data must not change while they are in use.
func decodeWireGroup(data []byte) (*traj.Group, []rawArrays, error) {
	s := &scanner{b: data}
	g := &traj.Group{}
	var raws []rawArrays
	err := s.object(groupFields, func(key string) error {
		var err error
		switch key {
		case "schema":
			g.Schema, err = s.str()
		case "group_id":
			g.GroupID, err = s.str()
		case "job_id":
			g.JobID, err = s.str()
		case "prompt_id":
			g.PromptID, err = s.str()
		case "iteration":
			g.Iteration, err = s.int()
		case "policy_version":
			g.PolicyVersion, err = s.int64()
		case "trajectories":
			g.Trajectories, raws = nil, nil
			if s.null() {
				return nil
			}
			err = s.array(func(i int) error {
				g.Trajectories = append(g.Trajectories, traj.Trajectory{})
				raws = append(raws, rawArrays{})
				if err := s.trajectory(&g.Trajectories[i], &raws[i]); err != nil {
					return fmt.Errorf("trajectories[%d]: %w", i, err)
				}
				return nil
			})
		}
		if err != nil && key != "trajectories" {
			return fmt.Errorf("%s: %w", key, err)
		}
		return err
	})
	if err == nil {
		if s.ws(); s.i < len(s.b) {
			err = s.syntax("trailing data after the group")
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("decode group: %w", err)
	}
	if err := g.Validate(); err != nil {
		return nil, nil, fmt.Errorf("decode group: %w", err)
	}
	return g, raws, nil
}

// trajectory decodes one trajectory object into t and raw.
func (s *scanner) trajectory(t *traj.Trajectory, raw *rawArrays) error {
	return s.object(trajectoryFields, func(key string) error {
		var err error
		switch key {
		case "schema":
			t.Schema, err = s.str()
		case "id":
			t.ID, err = s.str()
		case "job_id":
			t.JobID, err = s.str()
		case "prompt_id":
			t.PromptID, err = s.str()
		case "iteration":
			t.Iteration, err = s.int()
		case "group_id":
			t.GroupID, err = s.str()
		case "group_size":
			t.GroupSize, err = s.int()
		case "sample_index":
			t.SampleIndex, err = s.int()
		case "policy_version":
			t.PolicyVersion, err = s.int64()
		case "seed":
			t.Seed, err = s.uint64()
		case "temperature":
			t.Temperature, err = s.float64Ptr()
		case "model":
			err = s.model(&t.Model)
		case "tokens":
			t.Tokens, raw.tokens, err = s.int32s()
		case "prompt_len":
			t.PromptLen, err = s.int()
		case "loss_mask":
			var m []uint8
			m, raw.lossMask, err = s.uint8s()
			t.LossMask = m
		case "logprobs":
			t.Logprobs, raw.logprobs, err = s.float32s()
		case "ref_logprobs":
			t.RefLogprobs, raw.refLogprobs, err = s.float32s()
		case "segments":
			t.Segments, err = s.segments()
		case "finish_reason":
			var r string
			r, err = s.str()
			t.FinishReason = traj.FinishReason(r)
		case "reward":
			err = s.reward(&t.Reward)
		case "step_rewards":
			t.StepRewards, err = s.float64s()
		case "answer":
			t.Answer, err = s.str()
		case "meta":
			t.Meta, err = s.raw()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
}

// scanner walks one JSON document.
type scanner struct {
	b []byte
	i int
	// tokensHint and responseHint are the lengths of the last tokens array
	// and of the last per-response array read: they size the next ones.
	tokensHint, responseHint int
}

var errUnexpectedEnd = io.ErrUnexpectedEOF

func (s *scanner) syntax(what string) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", s.i, what)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\n', '\t', '\r':
			s.i++
		default:
			return
		}
	}
}

// null consumes a null literal if one comes next.
func (s *scanner) null() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object reads an object, calling field with the canonical name (one of
// names, matched exactly or else case-insensitively) of each key; field must
// consume the value. An unknown key is an error.
func (s *scanner) object(names []string, field func(key string) error) error {
	s.ws()
	if s.i >= len(s.b) {
		return errUnexpectedEnd
	}
	if s.b[s.i] != '{' {
		return s.syntax("want an object")
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.key()
		if err != nil {
			return err
		}
		name := ""
		for _, n := range names {
			if n == key {
				name = n
				break
			}
		}
		if name == "" {
			for _, n := range names {
				if bytes.EqualFold([]byte(n), []byte(key)) {
					name = n
					break
				}
			}
		}
		if name == "" {
			return fmt.Errorf("unknown field %q", key)
		}
		s.ws()
		if s.i >= len(s.b) {
			return errUnexpectedEnd
		}
		if s.b[s.i] != ':' {
			return s.syntax("want ':' after a key")
		}
		s.i++
		if err := field(name); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errUnexpectedEnd
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.syntax("want ',' or '}' after a value")
		}
	}
}

// array reads an array, calling elem for each element (index i), which must
// consume it.
func (s *scanner) array(elem func(i int) error) error {
	s.ws()
	if s.i >= len(s.b) {
		return errUnexpectedEnd
	}
	if s.b[s.i] != '[' {
		return s.syntax("want an array")
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		if err := elem(n); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errUnexpectedEnd
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.syntax("want ',' or ']' after an element")
		}
	}
}

// key reads an object key.
func (s *scanner) key() (string, error) {
	s.ws()
	if s.i >= len(s.b) {
		return "", errUnexpectedEnd
	}
	if s.b[s.i] != '"' {
		return "", s.syntax("want a key")
	}
	return s.str()
}

// str reads a string (null reads as ""). Plain ASCII without escapes is
// taken as is; anything else goes through encoding/json.
func (s *scanner) str() (string, error) {
	if s.null() {
		return "", nil
	}
	if s.i >= len(s.b) {
		return "", errUnexpectedEnd
	}
	if s.b[s.i] != '"' {
		return "", errors.New("want a string")
	}
	start := s.i
	for j := start + 1; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			s.i = j + 1
			return string(s.b[start+1 : j]), nil
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			break
		}
	}
	end, err := skipString(s.b, start)
	if err != nil {
		return "", err
	}
	var v string
	if err := encjson.Unmarshal(s.b[start:end], &v); err != nil {
		return "", err
	}
	s.i = end
	return v, nil
}

// skipString returns the end of the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errUnexpectedEnd
}

// number reads one JSON number (strict grammar) and returns its bytes and
// whether it is an integer (no fraction, no exponent).
func (s *scanner) number() ([]byte, bool, error) {
	s.ws()
	b, i := s.b, s.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return nil, false, errUnexpectedEnd
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return nil, false, fmt.Errorf("want a number at byte %d", start)
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		if i++; i >= len(b) || !isDigit(b[i]) {
			return nil, false, fmt.Errorf("bad number at byte %d", start)
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return nil, false, fmt.Errorf("bad number at byte %d", start)
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.i = i
	return b[start:i], integer, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// integer reads an integer of the given bit size (null reads as 0).
func (s *scanner) integer(bits int) (int64, error) {
	if s.null() {
		return 0, nil
	}
	num, isInt, err := s.number()
	if err != nil {
		return 0, err
	}
	if !isInt {
		return 0, fmt.Errorf("%s is not an integer", num)
	}
	return strconv.ParseInt(unsafeString(num), 10, bits)
}

func (s *scanner) int64() (int64, error) { return s.integer(64) }

func (s *scanner) int() (int, error) {
	v, err := s.integer(strconv.IntSize)
	return int(v), err
}

func (s *scanner) uint64() (uint64, error) {
	if s.null() {
		return 0, nil
	}
	num, isInt, err := s.number()
	if err != nil {
		return 0, err
	}
	if !isInt {
		return 0, fmt.Errorf("%s is not an integer", num)
	}
	return strconv.ParseUint(unsafeString(num), 10, 64)
}

// arrayStart consumes the '[' of a number array, or null (reported by ok
// false); it returns whether the array is empty (its ']' consumed too).
func (s *scanner) arrayStart() (ok, empty bool, err error) {
	if s.null() {
		return false, false, nil
	}
	if s.i >= len(s.b) {
		return false, false, errUnexpectedEnd
	}
	if s.b[s.i] != '[' {
		return false, false, s.syntax("want an array")
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true, true, nil
	}
	return true, false, nil
}

// arrayNext consumes what follows an element: ',' (more is true) or ']'.
func (s *scanner) arrayNext() (more bool, err error) {
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case ',':
			s.i++
			s.ws()
			return true, nil
		case ']':
			s.i++
			return false, nil
		}
	}
	s.ws()
	if s.i >= len(s.b) {
		return false, errUnexpectedEnd
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		s.ws()
		return true, nil
	case ']':
		s.i++
		return false, nil
	}
	return false, s.syntax("want ',' or ']' after an element")
}

// The per-token arrays are read by one loop each (no callbacks: they are
// most of the bytes). Their raw bytes (nil for null) are returned alongside.

func (s *scanner) int32s() ([]int32, []byte, error) {
	start := s.i
	ok, empty, err := s.arrayStart()
	if !ok || err != nil {
		return nil, nil, err
	}
	out := make([]int32, 0, max(s.tokensHint, 16))
	for more := !empty; more; {
		// Token ids are short non-negative decimals without a leading zero:
		// parse those inline, the rest through the full grammar.
		b, i := s.b, s.i
		v := int32(0)
		for i < len(b) && i-s.i < 9 && isDigit(b[i]) {
			v = v*10 + int32(b[i]-'0')
			i++
		}
		if n := i - s.i; n > 0 && (b[s.i] != '0' || n == 1) && (i == len(b) || !isDigit(b[i]) && b[i] != '.' && b[i]|0x20 != 'e') {
			out = append(out, v)
			s.i = i
		} else {
			num, isInt, err := s.number()
			if err == nil && !isInt {
				err = fmt.Errorf("%s is not an integer", num)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("[%d]: %w", len(out), err)
			}
			v, err := strconv.ParseInt(unsafeString(num), 10, 32)
			if err != nil {
				return nil, nil, fmt.Errorf("[%d]: %w", len(out), err)
			}
			out = append(out, int32(v))
		}
		if more, err = s.arrayNext(); err != nil {
			return nil, nil, err
		}
	}
	s.tokensHint = len(out)
	return out, s.b[start:s.i], nil
}

func (s *scanner) uint8s() ([]uint8, []byte, error) {
	start := s.i
	ok, empty, err := s.arrayStart()
	if !ok || err != nil {
		return nil, nil, err
	}
	out := make([]uint8, 0, max(s.responseHint, 16))
	for more := !empty; more; {
		// The common case, a single digit followed by ',' or ']'.
		if i := s.i; i+1 < len(s.b) && isDigit(s.b[i]) && (s.b[i+1] == ',' || s.b[i+1] == ']') {
			out = append(out, s.b[i]-'0')
			s.i++
		} else {
			num, isInt, err := s.number()
			if err == nil && !isInt {
				err = fmt.Errorf("%s is not an integer", num)
			}
			var v uint64
			if err == nil {
				v, err = strconv.ParseUint(unsafeString(num), 10, 8)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("[%d]: %w", len(out), err)
			}
			out = append(out, uint8(v))
		}
		if more, err = s.arrayNext(); err != nil {
			return nil, nil, err
		}
	}
	s.responseHint = len(out)
	return out, s.b[start:s.i], nil
}

func (s *scanner) float32s() ([]float32, []byte, error) {
	start := s.i
	ok, empty, err := s.arrayStart()
	if !ok || err != nil {
		return nil, nil, err
	}
	out := make([]float32, 0, max(s.responseHint, 16))
	for more := !empty; more; {
		from := s.i
		end, v, fast, err := scanFloat32(s.b, s.i)
		if err == nil && !fast {
			var f float64
			f, err = strconv.ParseFloat(unsafeString(s.b[from:end]), 32)
			v = float32(f)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("[%d]: %w", len(out), err)
		}
		out = append(out, v)
		s.i = end
		if more, err = s.arrayNext(); err != nil {
			return nil, nil, err
		}
	}
	s.responseHint = len(out)
	return out, s.b[start:s.i], nil
}

// nested reads an object (null leaves it alone, as encoding/json does).
func (s *scanner) nested(names []string, field func(key string) error) error {
	if s.null() {
		return nil
	}
	return s.object(names, func(key string) error {
		if err := field(key); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
}

func (s *scanner) model(m *traj.ModelRef) error {
	return s.nested(modelFields, func(key string) (err error) {
		switch key {
		case "name":
			m.Name, err = s.str()
		case "hash":
			m.Hash, err = s.str()
		}
		return err
	})
}

func (s *scanner) reward(r *traj.Reward) error {
	return s.nested(rewardFields, func(key string) (err error) {
		switch key {
		case "total":
			r.Total, err = s.float64()
		case "parts":
			if s.null() {
				r.Parts = nil
				return nil
			}
			if r.Parts == nil {
				r.Parts = map[string]float64{}
			}
			return s.mapObject(func(name string) error {
				v, err := s.float64()
				r.Parts[name] = v
				return err
			})
		}
		return err
	})
}

func (s *scanner) segments() ([]traj.Segment, error) {
	if s.null() {
		return nil, nil
	}
	out := make([]traj.Segment, 0, 8)
	err := s.array(func(i int) error {
		out = append(out, traj.Segment{})
		seg := &out[i]
		err := s.nested(segmentFields, func(key string) (err error) {
			switch key {
			case "kind":
				var k string
				k, err = s.str()
				seg.Kind = traj.SegmentKind(k)
			case "turn":
				seg.Turn, err = s.int()
			case "start":
				seg.Start, err = s.int()
			case "end":
				seg.End, err = s.int()
			case "text":
				seg.Text, err = s.str()
			case "call":
				if s.null() {
					seg.Call = nil
					return nil
				}
				if seg.Call == nil {
					seg.Call = &traj.ToolCall{}
				}
				err = s.call(seg.Call)
			case "result":
				if s.null() {
					seg.Result = nil
					return nil
				}
				if seg.Result == nil {
					seg.Result = &traj.ToolResult{}
				}
				err = s.result(seg.Result)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("[%d].%w", i, err)
		}
		return nil
	})
	return out, err
}

func (s *scanner) call(c *traj.ToolCall) error {
	return s.nested(callFields, func(key string) (err error) {
		switch key {
		case "name":
			c.Name, err = s.str()
		case "arguments":
			c.Arguments, err = s.raw()
		case "raw":
			c.Raw, err = s.str()
		case "parse_error":
			c.ParseError, err = s.str()
		}
		return err
	})
}

func (s *scanner) result(r *traj.ToolResult) error {
	return s.nested(resultFields, func(key string) (err error) {
		switch key {
		case "ok":
			r.OK, err = s.bool(r.OK)
		case "error_class":
			r.ErrorClass, err = s.str()
		case "error":
			r.Error, err = s.str()
		case "content":
			r.Content, err = s.str()
		case "latency_ms":
			r.LatencyMS, err = s.float64()
		case "truncated":
			r.Truncated, err = s.bool(r.Truncated)
		}
		return err
	})
}

// mapObject reads an object with arbitrary keys (matched exactly, as
// encoding/json does for maps), calling field for each.
func (s *scanner) mapObject(field func(key string) error) error {
	s.ws()
	if s.i >= len(s.b) {
		return errUnexpectedEnd
	}
	if s.b[s.i] != '{' {
		return s.syntax("want an object")
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.key()
		if err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errUnexpectedEnd
		}
		if s.b[s.i] != ':' {
			return s.syntax("want ':' after a key")
		}
		s.i++
		if err := field(key); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		s.ws()
		if s.i >= len(s.b) {
			return errUnexpectedEnd
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.syntax("want ',' or '}' after a value")
		}
	}
}

// float64 reads a number as encoding/json does (null reads as 0).
func (s *scanner) float64() (float64, error) {
	if s.null() {
		return 0, nil
	}
	num, _, err := s.number()
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(unsafeString(num), 64)
}

// float64Ptr reads a number into a new float64 (null reads as nil, as
// encoding/json does for a pointer).
func (s *scanner) float64Ptr() (*float64, error) {
	if s.null() {
		return nil, nil
	}
	v, err := s.float64()
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// float64s reads an array of numbers (null reads as nil).
func (s *scanner) float64s() ([]float64, error) {
	if s.null() {
		return nil, nil
	}
	out := make([]float64, 0, 8)
	err := s.array(func(i int) error {
		v, err := s.float64()
		if err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// bool reads true or false; null leaves old.
func (s *scanner) bool(old bool) (bool, error) {
	s.ws()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true, nil
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false, nil
	case s.null():
		return old, nil
	}
	return false, errors.New("want true or false")
}

// raw reads any JSON value and returns a copy of its bytes (null is the
// bytes "null", as encoding/json stores it in a json.RawMessage).
func (s *scanner) raw() ([]byte, error) {
	s.ws()
	end, err := skipValue(s.b, s.i)
	if err != nil {
		return nil, err
	}
	v := s.b[s.i:end]
	if !encjson.Valid(v) {
		return nil, s.syntax("invalid JSON value")
	}
	s.i = end
	return bytes.Clone(v), nil
}

// skipValue returns the end of the value starting at b[i]. It only finds the
// end (strings, nesting); the value's own decoder checks the rest.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errUnexpectedEnd
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errUnexpectedEnd
	}
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\n', '\t', '\r':
			return j, nil
		}
	}
	return len(b), nil
}
