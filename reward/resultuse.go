package reward

import (
	"math/big"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolrl/toolrl/traj"
)

// maxVerbatimResult is the longest non-numeric result (in bytes) that must
// appear whole in the model's later text to count as used; a longer result
// counts as used when one of its numbers does.
const maxVerbatimResult = 80

// ResultUsed reports whether the model used a call's result: whether content
// (a successful result) appears in the text of the model segments of later,
// the segments after the tool turn that answered the call (ComputeToolRewards
// passes those after the turn's tool segments). Only the model's own later
// tokens are read: neither the injected result nor the calls of the turn
// that produced it (they lie in the model segments before the tool turn)
// can collect it; a later call's arguments are the model's text and do
// count (a result chained into the next call is used).
//
//   - A numeric result (one number: optional sign, digits with optional
//     thousands separators, optional fraction) is used when a number token of
//     the later text has the same value: 56088 matches "56,088" and "56088.0",
//     408 is not found in "4080", "408.5" or "1408", 25 not in "0.25", and 5
//     not in "-5" (a '-' after a digit, letter or closing bracket is a minus,
//     so "10-5" holds 10 and 5).
//   - Other content of at most 80 bytes is used when it appears whole, case
//     and runs of white space ignored, not inside a longer word ("Paris" is
//     not found in "Parisian").
//   - Longer content is used when any of its numbers with two or more digits
//     appears as above.
//
// Its limits: it sees only text, not intent. A value the model derives by
// itself after the call counts as well (it cannot be told apart); a value
// rewritten in another form (1/3 for 0.333333, "twelve" for 12, a rounded
// 0.33) does not count.
func ResultUsed(content string, later []traj.Segment) bool {
	var b strings.Builder
	for _, s := range later {
		if s.Kind == traj.SegmentModel {
			b.WriteString(s.Text)
			b.WriteByte('\n')
		}
	}
	return resultUsed(content, b.String())
}

func resultUsed(content, later string) bool {
	content = strings.TrimSpace(content)
	if content == "" || strings.TrimSpace(later) == "" {
		return false
	}
	if v, ok := singleNumber(content); ok {
		return containsValue(later, v)
	}
	if len(content) <= maxVerbatimResult {
		return containsWords(normalizeText(later), normalizeText(content))
	}
	for _, n := range numberTokens(content) {
		if n.digits >= 2 && containsValue(later, n.value) {
			return true
		}
	}
	return false
}

// numberToken is a number written in text: its value, its byte span and how
// many digits it has.
type numberToken struct {
	value      *big.Rat
	start, end int
	digits     int
}

// numberTokens returns the numbers of s, longest match first from the left:
// an optional '-' sign (not after a digit, letter, '.', ')' or ']', where it
// is a minus), digits with ',' thousands separators (a ',' followed by
// exactly three digits), an optional '.' and fraction digits; or a fraction
// alone (".5") when no digit comes before the point.
func numberTokens(s string) []numberToken {
	var toks []numberToken
	for i := 0; i < len(s); {
		start := i
		j := i
		if s[j] == '-' && signPosition(s, j) {
			j++
		}
		k := j
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k == j { // no integer digits: a fraction alone, or not a number
			if !(k+1 < len(s) && s[k] == '.' && isDigit(s[k+1]) && (k == 0 || !isDigit(s[k-1]))) {
				i++
				continue
			}
		}
		for k+3 < len(s) && k > j && s[k] == ',' && isDigit(s[k+1]) && isDigit(s[k+2]) && isDigit(s[k+3]) &&
			(k+4 == len(s) || !isDigit(s[k+4])) {
			k += 4
		}
		if k+1 < len(s) && s[k] == '.' && isDigit(s[k+1]) {
			k++
			for k < len(s) && isDigit(s[k]) {
				k++
			}
		}
		lit := strings.ReplaceAll(s[start:k], ",", "")
		digits := 0
		for c := 0; c < len(lit); c++ {
			if isDigit(lit[c]) {
				digits++
			}
		}
		v, ok := new(big.Rat).SetString(lit)
		if ok {
			toks = append(toks, numberToken{value: v, start: start, end: k, digits: digits})
		}
		i = k
	}
	return toks
}

// signPosition reports whether the '-' at s[i] can start a negative number:
// it is not preceded by something it would subtract from.
func signPosition(s string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == ')' || r == ']')
}

// singleNumber parses s when it is exactly one number token.
func singleNumber(s string) (*big.Rat, bool) {
	toks := numberTokens(s)
	if len(toks) != 1 || toks[0].start != 0 || toks[0].end != len(s) {
		return nil, false
	}
	return toks[0].value, true
}

func containsValue(text string, v *big.Rat) bool {
	for _, t := range numberTokens(text) {
		if t.value.Cmp(v) == 0 {
			return true
		}
	}
	return false
}

// normalizeText lowers the case and turns every run of white space into one
// space.
func normalizeText(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// containsWords reports whether sub occurs in text without a letter or digit
// right before or after it where sub itself starts or ends with one.
func containsWords(text, sub string) bool {
	first, _ := utf8.DecodeRuneInString(sub)
	last, _ := utf8.DecodeLastRuneInString(sub)
	for off := 0; off <= len(text); {
		k := strings.Index(text[off:], sub)
		if k < 0 {
			return false
		}
		start, end := off+k, off+k+len(sub)
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		okBefore := start == 0 || !isWordRune(first) || !isWordRune(before)
		okAfter := end == len(text) || !isWordRune(last) || !isWordRune(after)
		if okBefore && okAfter {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[start:])
		off = start + size
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
