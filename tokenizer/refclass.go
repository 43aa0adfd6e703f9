package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
)

// refClassPattern rewrites \p{X} (general categories, refCategories), \P{X}
// outside brackets, \s and \S in a regex so that regexp2 uses the
// reference's character classes (unicode_ref.go) rather than Go's own Unicode
// tables, which may be of another Unicode version. Other syntax is copied
// unchanged.
func refClassPattern(pattern string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			rest := pattern[i+1:]
			var table *unicode.RangeTable
			category := ""
			negate, skip := false, 1
			switch {
			case (rest[0] == 'p' || rest[0] == 'P' && !inClass) && strings.HasPrefix(rest[1:], "{") && strings.Contains(rest, "}"):
				name := rest[2:strings.Index(rest, "}")]
				if t, ok := refCategories[name]; ok {
					table, skip, negate, category = t, 2+len(name)+1, rest[0] == 'P', name
				}
			case rest[0] == 's':
				table = refSpace
			case rest[0] == 'S' && !inClass:
				table, negate = refSpace, true
			}
			if table == nil {
				b.WriteByte(c)
				b.WriteByte(pattern[i+1])
				i++
				continue
			}
			if !inClass {
				b.WriteByte('[')
				if negate {
					b.WriteByte('^')
				}
			}
			if extra, ok := refCategoryExtra[category]; ok && unicode.Version == goUnicodeVersion {
				// Go's category plus what only the reference has: regexp2
				// tests \p{X} by binary search, explicit ranges one by one.
				fmt.Fprintf(&b, `\p{%s}`, category)
				for k := 0; k+1 < len(extra); k += 2 {
					writeRange(&b, uint32(extra[k]), uint32(extra[k+1]))
				}
			} else {
				writeClassRanges(&b, table)
			}
			if !inClass {
				b.WriteByte(']')
			}
			i += skip
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// A ']' right after '[' or '[^' is a literal.
			if strings.HasPrefix(pattern[i+1:], "^]") {
				b.WriteString("^]")
				i += 2
			} else if strings.HasPrefix(pattern[i+1:], "]") {
				b.WriteByte(']')
				i++
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func writeRange(b *strings.Builder, lo, hi uint32) {
	if lo == hi {
		fmt.Fprintf(b, `\x{%x}`, lo)
	} else {
		fmt.Fprintf(b, `\x{%x}-\x{%x}`, lo, hi)
	}
}

func writeClassRanges(b *strings.Builder, t *unicode.RangeTable) {
	for _, r := range t.R16 {
		writeRange(b, uint32(r.Lo), uint32(r.Hi))
	}
	for _, r := range t.R32 {
		writeRange(b, r.Lo, r.Hi)
	}
}
