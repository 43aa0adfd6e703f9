package wire

import (
	"bytes"
	encjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unsafe"

	"github.com/toolrl/toolrl/traj"
)

// The decoder: one pass over a document that parses the per-token arrays in
// place (strict JSON number grammar, a fast float32 path) and keeps their raw
// bytes, and reads every other value directly as well (raw JSON values such
// as meta and call arguments are checked with encoding/json.Valid). Unknown
// fields are an error at every level and keys match case-insensitively, as in
// encoding/json with DisallowUnknownFields.

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

// scanner walks one JSON document.
type scanner struct {
	b []byte
	i int
	// tokensHint and responseHint are the lengths of the last tokens array
	// and of the last per-response array read: they size the next ones.
	tokensHint, responseHint int
	// groupHint, when > 0, is how many trajectories the group holds.
	groupHint int
	// segSlab and f64Slab back the segments and float64 arrays decoded so
	// far (each value a full-capacity sub-slice): fewer allocations.
	segSlab []traj.Segment
	f64Slab []float64
	// resSlab is the current chunk of tool results (newResult).
	resSlab []traj.ToolResult
	// strs holds short strings read so far, in slots picked by a cheap
	// hash of their bytes: a group repeats its ids, schema, model and
	// segment kinds in every trajectory, and each is allocated once (unless
	// another string took its slot meanwhile).
	strs *[internSlots]string
}

var errUnexpectedEnd = io.ErrUnexpectedEOF

// end checks that only white space follows the value just read.
func (s *scanner) end() error {
	if s.ws(); s.i < len(s.b) {
		return s.syntax("trailing data after the value")
	}
	return nil
}

func (s *scanner) syntax(what string) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", s.i, what)
}

// ws skips white space.
func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' { // the common case, inlined
		return
	}
	s.wsSlow()
}

func (s *scanner) wsSlow() {
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
	if s.i+4 <= len(s.b) && s.b[s.i] == 'n' && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// object reads an object, calling field with the canonical name (one of
// names, matched exactly or else case-insensitively) of each key; field must
// consume the value. An unknown key is an error. With names nil every key is
// passed as it is (a map, as encoding/json matches map keys).
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
	next := 0 // index in names of the field expected next
	for {
		// Writers emit the fields in names' order: first try the key as
		// the one after the last match, "name" in place (a name has no
		// quote, escape or control byte, so the bytes are the whole key).
		if next < len(names) {
			s.ws()
			if n := names[next]; s.i+len(n)+2 <= len(s.b) && s.b[s.i] == '"' && s.b[s.i+1+len(n)] == '"' &&
				string(s.b[s.i+1:s.i+1+len(n)]) == n {
				s.i += len(n) + 2
				next++
				if err := s.fieldValue(n, field); err != nil {
					return err
				}
				if done, err := s.objectNext(); done || err != nil {
					return err
				}
				continue
			}
		}
		// A known field's key is only compared: read it in place. A map's
		// keys are kept.
		key, err := s.key(names != nil)
		if err != nil {
			return err
		}
		name := ""
		if names == nil {
			name = key
		}
		if next < len(names) && names[next] == key {
			name = names[next]
			next++
		} else {
			for k, n := range names {
				if n == key {
					name, next = n, k+1
					break
				}
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
		if err := s.fieldValue(name, field); err != nil {
			return err
		}
		if done, err := s.objectNext(); done || err != nil {
			return err
		}
	}
}

// fieldValue reads the ':' after a key and calls field(name) to read the
// value.
func (s *scanner) fieldValue(name string, field func(key string) error) error {
	s.ws()
	if s.i >= len(s.b) {
		return errUnexpectedEnd
	}
	if s.b[s.i] != ':' {
		return s.syntax("want ':' after a key")
	}
	s.i++
	return field(name)
}

// objectNext reads what follows a member: ',' (another comes) or '}' (done).
func (s *scanner) objectNext() (done bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return true, errUnexpectedEnd
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, nil
	case '}':
		s.i++
		return true, nil
	default:
		return true, s.syntax("want ',' or '}' after a value")
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

// key reads an object key. With view, a plain ASCII key is a view of the
// input (no copy, no interning): the caller must not keep it.
func (s *scanner) key(view bool) (string, error) {
	s.ws()
	if s.i >= len(s.b) {
		return "", errUnexpectedEnd
	}
	if s.b[s.i] != '"' {
		return "", s.syntax("want a key")
	}
	if view {
		for j := s.i + 1; j < len(s.b); j++ {
			c := s.b[j]
			if c == '"' {
				k := unsafeString(s.b[s.i+1 : j])
				s.i = j + 1
				return k, nil
			}
			if c < 0x20 || c >= 0x7f || c == '\\' {
				break
			}
		}
	}
	return s.str()
}

// str reads a string (null reads as ""). Plain ASCII without escapes is
// taken as is; anything else goes through encoding/json.
func (s *scanner) str() (string, error) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' { // not the common case
		if s.null() {
			return "", nil
		}
		if s.i >= len(s.b) {
			return "", errUnexpectedEnd
		}
		return "", errors.New("want a string")
	}
	start := s.i
	for j := start + 1; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			s.i = j + 1
			return s.intern(s.b[start+1 : j]), nil
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

// internSlots is the number of strings intern keeps.
const internSlots = 128

// intern returns b as a string: for short bytes, the string kept in their
// slot when it has the same bytes (no allocation), else a new one that
// takes the slot. The slot is picked from the length and three bytes,
// which tells apart the strings a group repeats (schema, ids, kinds, the
// model's name) without hashing them whole.
func (s *scanner) intern(b []byte) string {
	n := len(b)
	if n == 0 || n > 64 {
		return string(b)
	}
	if s.strs == nil {
		s.strs = new([internSlots]string)
	}
	slot := &s.strs[(uint(n)*0x9e37^uint(b[0])*31^uint(b[n/2])*131^uint(b[n-1])*7)%internSlots]
	if *slot == string(b) { // the conversion does not allocate
		return *slot
	}
	*slot = string(b)
	return *slot
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

// integerText reads one number that must be an integer (no fraction, no
// exponent) and returns its text.
func (s *scanner) integerText() ([]byte, error) {
	num, isInt, err := s.number()
	if err == nil && !isInt {
		err = fmt.Errorf("%s is not an integer", num)
	}
	return num, err
}

// integer reads an integer of the given bit size (null reads as 0).
func (s *scanner) integer(bits int) (int64, error) {
	if s.null() {
		return 0, nil
	}
	num, err := s.integerText()
	if err != nil {
		return 0, err
	}
	if bits == 64 && len(num) <= 18 {
		// number checked the grammar (-?digits): at most 18 characters
		// always fit, so parse inline.
		digits, neg := num, num[0] == '-'
		if neg {
			digits = num[1:]
		}
		var v int64
		for _, c := range digits {
			v = v*10 + int64(c-'0')
		}
		if neg {
			v = -v
		}
		return v, nil
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
	num, err := s.integerText()
	if err != nil {
		return 0, err
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
// The common case, a ',' right before the next element, is inlined.
func (s *scanner) arrayNext() (more bool, err error) {
	if i := s.i; i+1 < len(s.b) && s.b[i] == ',' && s.b[i+1] > ' ' {
		s.i = i + 1
		return true, nil
	}
	return s.arrayNextSlow()
}

// arrayNextSlow is arrayNext for the other cases: ']', white space, the end.
func (s *scanner) arrayNextSlow() (more bool, err error) {
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
			num, err := s.integerText()
			var v int64
			if err == nil {
				v, err = strconv.ParseInt(unsafeString(num), 10, 32)
			}
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
			num, err := s.integerText()
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

// mapObject reads an object with arbitrary keys (matched exactly, as
// encoding/json does for maps), calling field for each.
func (s *scanner) mapObject(field func(key string) error) error {
	return s.object(nil, func(key string) error {
		if err := field(key); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
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
	// Like segments, a group's float64 arrays share one slab.
	if cap(s.f64Slab)-len(s.f64Slab) < 8 {
		s.f64Slab = make([]float64, 0, max(8, 8*s.groupHint))
	}
	start := len(s.f64Slab)
	err := s.array(func(i int) error {
		v, err := s.float64()
		if err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
		s.f64Slab = append(s.f64Slab, v)
		return nil
	})
	end := len(s.f64Slab)
	return s.f64Slab[start:end:end], err
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
