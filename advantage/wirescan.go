package advantage

import (
	"bytes"
	encjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	json "github.com/goccy/go-json"

	"github.com/toolrl/toolrl/traj"
)

// The service's group decoder: one pass over the entry's JSON that parses
// the per-token arrays in place (strict JSON number grammar, the fast
// float32 path of wire.go) and keeps their raw bytes for the records, reads
// strings and integers directly, and hands only the small nested values
// (model, segments, reward, step_rewards, meta) to go-json, strictly. Unknown
// fields are an error at every level, keys match case-insensitively as in
// encoding/json, and the result is validated (traj.Group.Validate), so a
// corrupt entry is dead-lettered with the field at fault.

// groupFields and trajectoryFields are the JSON names the decoder knows, in
// traj's order (a test checks them against traj.Group and traj.Trajectory: a
// field added there must be decoded here, or the service would reject every
// group carrying it).
var (
	groupFields      = []string{"schema", "group_id", "job_id", "prompt_id", "policy_version", "trajectories"}
	trajectoryFields = []string{"schema", "id", "job_id", "prompt_id", "group_id", "group_size", "sample_index",
		"policy_version", "seed", "model", "tokens", "prompt_len", "loss_mask", "logprobs", "ref_logprobs",
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
		case "model":
			err = s.delegate(&t.Model)
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
			t.Segments = nil
			err = s.delegate(&t.Segments)
		case "finish_reason":
			var r string
			r, err = s.str()
			t.FinishReason = traj.FinishReason(r)
		case "reward":
			t.Reward = traj.Reward{}
			err = s.delegate(&t.Reward)
		case "step_rewards":
			t.StepRewards = nil
			err = s.delegate(&t.StepRewards)
		case "answer":
			t.Answer, err = s.str()
		case "meta":
			t.Meta = nil
			err = s.delegate((*json.RawMessage)(&t.Meta))
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

// delegate decodes the next value into v with go-json, unknown fields
// rejected.
func (s *scanner) delegate(v any) error {
	s.ws()
	end, err := skipValue(s.b, s.i)
	if err != nil {
		return err
	}
	if err := json.UnmarshalWithOption(s.b[s.i:end], v, disallowUnknownFields); err != nil {
		return err
	}
	s.i = end
	return nil
}

// disallowUnknownFields sets go-json's DisallowUnknownFieldsOption flag
// (1<<4 in internal/decoder/option.go of v0.12.0), which the public API offers
// only on the stream Decoder. TestWireDecodeRejects fails if a go-json upgrade
// moves the flag.
func disallowUnknownFields(o *json.DecodeOption) { o.Flags |= 1 << 4 }

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
