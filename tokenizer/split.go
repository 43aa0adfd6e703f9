package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// span is a byte range of a string with whether a pattern matched it.
type span struct {
	start, end int
	match      bool
}

// matcher finds the matches of a pattern; the spans it returns tile s (gaps
// have match=false), as HF's Pattern::find_matches does.
type matcher interface {
	find(s string, dst []span) ([]span, error)
}

// regexMatcher runs a regex: the hand-written scanner when the pattern is a
// known one, regexp2 otherwise.
type regexMatcher struct {
	pattern string
	scan    scanKind
	re      *regexp2.Regexp
}

func newRegexMatcher(pattern string, allowScanner bool) (*regexMatcher, error) {
	m := &regexMatcher{pattern: pattern}
	if allowScanner {
		m.scan = scannerFor(pattern)
	}
	re, err := regexp2.Compile(refClassPattern(pattern), regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("compile regex %q: %w", pattern, err)
	}
	m.re = re
	return m, nil
}

func (m *regexMatcher) find(s string, dst []span) ([]span, error) {
	if s == "" {
		return append(dst, span{0, 0, false}), nil
	}
	if m.scan != 0 {
		for i := 0; i < len(s); {
			end := scanNext(m.scan, s, i)
			dst = append(dst, span{i, end, true})
			i = end
		}
		return dst, nil
	}
	return m.findRegexp2(s, dst)
}

// findRegexp2 is the general path. regexp2 reports rune offsets; they are
// converted back to byte offsets.
func (m *regexMatcher) findRegexp2(s string, dst []span) ([]span, error) {
	runes := []rune(s)
	byteAt := make([]int, len(runes)+1)
	off := 0
	for i, r := range runes {
		byteAt[i] = off
		off += utf8.RuneLen(r)
	}
	byteAt[len(runes)] = off
	prev := 0
	match, err := m.re.FindRunesMatch(runes)
	for match != nil && err == nil {
		start, end := byteAt[match.Index], byteAt[match.Index+match.Length]
		if prev != start {
			dst = append(dst, span{prev, start, false})
		}
		dst = append(dst, span{start, end, true})
		prev = end
		match, err = m.re.FindNextMatch(match)
	}
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", m.pattern, err)
	}
	if prev != len(s) {
		dst = append(dst, span{prev, len(s), false})
	}
	return dst, nil
}

// stringMatcher matches a literal string (non-overlapping, left to right).
type stringMatcher struct{ lit string }

func (m stringMatcher) find(s string, dst []span) ([]span, error) {
	if s == "" {
		return append(dst, span{0, 0, false}), nil
	}
	if m.lit == "" {
		return append(dst, span{0, len(s), false}), nil
	}
	prev := 0
	for {
		k := strings.Index(s[prev:], m.lit)
		if k < 0 {
			break
		}
		start := prev + k
		if start != prev {
			dst = append(dst, span{prev, start, false})
		}
		dst = append(dst, span{start, start + len(m.lit), true})
		prev = start + len(m.lit)
	}
	if prev != len(s) {
		dst = append(dst, span{prev, len(s), false})
	}
	return dst, nil
}

// runeMatcher matches every single rune for which f is true.
type runeMatcher func(rune) bool

func (f runeMatcher) find(s string, dst []span) ([]span, error) {
	if s == "" {
		return append(dst, span{0, 0, false}), nil
	}
	last := 0
	for i, r := range s {
		if f(r) {
			if last < i {
				dst = append(dst, span{last, i, false})
			}
			w := utf8.RuneLen(r)
			if r == utf8.RuneError {
				_, w = utf8.DecodeRuneInString(s[i:])
			}
			dst = append(dst, span{i, i + w, true})
			last = i + w
		}
	}
	if last < len(s) {
		dst = append(dst, span{last, len(s), false})
	}
	return dst, nil
}

// splitBehavior is HF's SplitDelimiterBehavior.
type splitBehavior int

const (
	behaviorRemoved splitBehavior = iota
	behaviorIsolated
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

func parseBehavior(s string) (splitBehavior, error) {
	switch s {
	case "Removed":
		return behaviorRemoved, nil
	case "Isolated":
		return behaviorIsolated, nil
	case "MergedWithPrevious":
		return behaviorMergedWithPrevious, nil
	case "MergedWithNext":
		return behaviorMergedWithNext, nil
	case "Contiguous":
		return behaviorContiguous, nil
	}
	return 0, fmt.Errorf("unsupported split behavior %q", s)
}

// applyBehavior turns matches into the byte ranges to keep, as
// NormalizedString::split does. The result may hold empty ranges; callers drop
// them.
func applyBehavior(matches []span, b splitBehavior, invert bool) []span {
	if invert {
		for i := range matches {
			matches[i].match = !matches[i].match
		}
	}
	out := matches[:0:0]
	switch b {
	case behaviorIsolated:
		out = append(out, matches...)
		for i := range out {
			out[i].match = false
		}
	case behaviorRemoved:
		for _, m := range matches {
			if !m.match {
				out = append(out, m)
			}
		}
	case behaviorContiguous:
		prev := false
		for _, m := range matches {
			if m.match == prev && len(out) > 0 {
				out[len(out)-1].end = m.end
			} else {
				out = append(out, span{m.start, m.end, false})
			}
			prev = m.match
		}
	case behaviorMergedWithPrevious:
		prev := false
		for _, m := range matches {
			if m.match && !prev && len(out) > 0 {
				out[len(out)-1].end = m.end
			} else {
				out = append(out, span{m.start, m.end, false})
			}
			prev = m.match
		}
	case behaviorMergedWithNext:
		prev := false
		for i := len(matches) - 1; i >= 0; i-- {
			m := matches[i]
			if m.match && !prev && len(out) > 0 {
				out[len(out)-1].start = m.start
			} else {
				out = append(out, span{m.start, m.end, false})
			}
			prev = m.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}
