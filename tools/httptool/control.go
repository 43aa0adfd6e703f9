package httptool

import (
	"strings"
	"unicode/utf8"
)

// StripControl removes terminal control sequences and control characters
// from s, keeping newlines and tabs: ANSI escape sequences (CSI such as
// "\x1b[31m", OSC such as "\x1b]0;title\x07", DCS/SOS/PM/APC strings up to
// their terminator, and two-byte escapes), their 8-bit C1 forms, the other C0
// controls (carriage return included), DEL and the C1 range U+0080-U+009F.
// A sequence cut off by the end of s is removed to the end. Bytes that are not
// valid UTF-8 are kept.
func StripControl(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteByte(s[i])
			i++
			continue
		}
		if !isControl(r) {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		i += n
		switch r {
		case 0x1b: // ESC: the sequence's kind is the next byte
			if i >= len(s) {
				continue
			}
			switch c := s[i]; {
			case c == '[':
				i = skipCSI(s, i+1)
			case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
				i = skipString(s, i+1)
			case c >= 0x20 && c <= 0x2f: // intermediates, then a final byte
				for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
					i++
				}
				if i < len(s) {
					i++
				}
			case c >= 0x30 && c <= 0x7e:
				i++
			}
		case 0x9b: // C1 CSI
			i = skipCSI(s, i)
		case 0x9d, 0x90, 0x98, 0x9e, 0x9f: // C1 OSC, DCS, SOS, PM, APC
			i = skipString(s, i)
		}
	}
	return b.String()
}

// isControl reports whether r is removed by StripControl (or starts a
// sequence that is).
func isControl(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f
}

// skipCSI returns the index after the CSI sequence whose parameters start at
// s[i]: parameter bytes 0x30-0x3F, intermediate bytes 0x20-0x2F, one final
// byte 0x40-0x7E (ECMA-48 5.4). A malformed sequence ends before the byte
// that broke it.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString returns the index after a control string (OSC, DCS, SOS, PM,
// APC) whose body starts at s[i]: it ends at BEL, ST ("\x1b\\" or U+009C),
// or the end of s.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}
