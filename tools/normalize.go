package tools

import (
	"strings"
	"unicode/utf8"
)

// TokenCounter counts the tokens of a text. The orchestrator passes the
// policy tokenizer's count so that output budgets are exact; EstimateTokens
// is the default.
type TokenCounter func(string) int

// EstimateTokens is a tokenizer-free estimate: one token per 4 bytes, rounded
// up, and at least one per whitespace-separated word. It over-counts short
// words and under-counts nothing common by more than a small factor.
func EstimateTokens(s string) int {
	words, inWord := 0, false
	for i := 0; i < len(s); i++ {
		space := s[i] == ' ' || s[i] == '\n' || s[i] == '\t'
		if !space && !inWord {
			words++
		}
		inWord = !space
	}
	return max((len(s)+3)/4, words)
}

// TruncationMarker ends an output that was cut to its token budget.
const TruncationMarker = "…[truncated]"

// Normalize makes tool output safe to inject: invalid UTF-8 becomes U+FFFD,
// "\r\n" and lone "\r" become "\n", ANSI escape sequences are removed, and
// every other control character except "\n" and "\t" is dropped.
func Normalize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\r':
			b.WriteByte('\n')
			i++
			if i < len(s) && s[i] == '\n' {
				i++
			}
		case c == 0x1b: // ESC: skip a CSI sequence ESC [ params final
			i++
			if i < len(s) && s[i] == '[' {
				i++
				for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
					i++
				}
				i++ // the final byte
			}
		case c < 0x20 && c != '\n' && c != '\t' || c == 0x7f:
			i++
		case c < 0x80:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			// C1 controls (U+0080..U+009F) are dropped too.
			if r >= 0x80 && r <= 0x9f {
				i += size
				continue
			}
			b.WriteRune(r) // RuneError for invalid bytes
			i += size
		}
	}
	return b.String()
}

// Truncate cuts s to at most maxTokens tokens by count, the marker included,
// and reports whether it cut. It cuts on a rune boundary, finding the longest
// prefix that fits by binary search (O(log n) counts).
func Truncate(s string, maxTokens int, count TokenCounter) (string, bool) {
	if count == nil {
		count = EstimateTokens
	}
	if maxTokens <= 0 || count(s) <= maxTokens {
		return s, false
	}
	budget := maxTokens - count(TruncationMarker)
	if budget <= 0 {
		return TruncationMarker, true
	}
	// No tokenizer spends fewer than one token per 64 bytes: cap the search.
	hi := min(len(s), budget*64)
	lo := 0 // invariant: s[:lo] fits
	for lo < hi {
		mid := (lo + hi + 1) / 2
		for mid > lo && mid < len(s) && !utf8.RuneStart(s[mid]) {
			mid--
		}
		if mid == lo {
			// No rune start in (lo, mid]: step over one rune.
			_, size := utf8.DecodeRuneInString(s[lo:])
			if lo+size > hi || count(s[:lo+size]) > budget {
				break
			}
			lo += size
			continue
		}
		if count(s[:mid]) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return s[:lo] + TruncationMarker, true
}
