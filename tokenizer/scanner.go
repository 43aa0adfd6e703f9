package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer regexes of GPT-2, Llama-3 and Qwen2 (Qwen2.5, Qwen3, and
// the many tokenizers derived from them). They use a lookahead, which Go's
// regexp lacks; scanPattern implements each one by hand, and
// TestScannerMatchesRegexp2 proves it returns the same matches as the
// regexp2 engine on the whole parity corpus.
const (
	patternGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternO200k is GPT-4o's (tiktoken o200k_base), as HF conversions write it.
	patternO200k = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// scanKind selects a hand-written scanner.
type scanKind int

const (
	scanGPT2 scanKind = iota + 1
	scanLlama3
	scanQwen2
	scanO200k
)

// scannerFor returns the hand-written scanner for a known pattern, or 0.
func scannerFor(pattern string) scanKind {
	switch pattern {
	case patternGPT2:
		return scanGPT2
	case patternLlama3:
		return scanLlama3
	case patternQwen2:
		return scanQwen2
	case patternO200k:
		return scanO200k
	}
	return 0
}

// isL, isN and isS are \p{L}, \p{N} and \s as the reference's regex engine
// has them (tables generated from the reference: unicode_ref.go), with ASCII
// fast paths.
func isL(r rune) bool {
	if r < utf8.RuneSelf {
		return r|0x20 >= 'a' && r|0x20 <= 'z'
	}
	return unicode.Is(refLetter, r)
}

func isN(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.Is(refNumber, r)
}

// isNumeric is Rust's char::is_numeric as the reference has it (Digits).
func isNumeric(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.Is(refNumeric, r)
}

func isS(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return unicode.Is(refSpace, r)
}

func isNL(r rune) bool { return r == '\r' || r == '\n' }

// decodeAt returns the rune at s[i] and its width (0 at the end).
func decodeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// contraction returns the length of a contraction ('s, 't, 're, 've, 'm, 'll,
// 'd) at s[i], or 0. fold makes it case-insensitive.
func contraction(s string, i int, fold bool) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	lower := func(c byte) byte {
		if fold && c >= 'A' && c <= 'Z' {
			return c + 32
		}
		return c
	}
	switch lower(s[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && lower(s[i+2]) == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && lower(s[i+2]) == 'l' {
			return 3
		}
	}
	return 0
}

// spanWhile returns the end of the run of runes from i that satisfy f, at most
// max runes (max < 0: no limit).
func spanWhile(s string, i int, f func(rune) bool, max int) int {
	for n := 0; i < len(s) && n != max; n++ {
		r, w := decodeAt(s, i)
		if !f(r) {
			break
		}
		i += w
	}
	return i
}

func isOther(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }

// whitespaceTail handles the shared `\s+(?!\S)|\s+` tail at s[i] (a \s rune):
// a whitespace run followed by a non-space loses its last rune, unless it is a
// single rune.
func whitespaceTail(s string, i int) int {
	end := spanWhile(s, i, isS, -1)
	if end == len(s) {
		return end
	}
	// Back off one rune so the lookahead sees whitespace.
	_, w := utf8.DecodeLastRuneInString(s[:end])
	if end-w > i {
		return end - w
	}
	return end
}

// scanNext returns the end of the match that starts at s[i] (i < len(s)).
// Every rune is matched by one alternative of these patterns, so matches tile
// the string.
func scanNext(kind scanKind, s string, i int) int {
	r, w := decodeAt(s, i)
	if kind == scanGPT2 {
		if n := contraction(s, i, false); n > 0 {
			return i + n
		}
		j, rr := i, r
		if r == ' ' {
			rr, _ = decodeAt(s, i+1)
			j = i + 1
		}
		switch {
		case isL(rr):
			return spanWhile(s, j, isL, -1)
		case isN(rr):
			return spanWhile(s, j, isN, -1)
		case rr >= 0 && isOther(rr):
			return spanWhile(s, j, isOther, -1)
		}
		return whitespaceTail(s, i)
	}
	if kind == scanO200k {
		return scanO200kNext(s, i)
	}
	// Llama-3 and Qwen2.
	if n := contraction(s, i, true); n > 0 {
		return i + n
	}
	if isL(r) {
		return spanWhile(s, i, isL, -1)
	}
	if !isNL(r) && !isN(r) {
		if next, _ := decodeAt(s, i+w); next >= 0 && isL(next) {
			return spanWhile(s, i+w, isL, -1)
		}
	}
	if isN(r) {
		if kind == scanQwen2 {
			return i + w
		}
		return spanWhile(s, i, isN, 3)
	}
	j, rr := i, r
	if r == ' ' {
		rr, _ = decodeAt(s, i+1)
		j = i + 1
	}
	if rr >= 0 && isOther(rr) {
		end := spanWhile(s, j, isOther, -1)
		return spanWhile(s, end, isNL, -1)
	}
	// r is whitespace. `\s*[\r\n]+`: up to the last newline of the run.
	end := spanWhile(s, i, isS, -1)
	lastNL := -1
	for k := i; k < end; {
		rk, wk := decodeAt(s, k)
		if isNL(rk) {
			lastNL = k + wk
		}
		k += wk
	}
	if lastNL >= 0 {
		return lastNL
	}
	return whitespaceTail(s, i)
}

// o200k classes: "upper" [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and "lower"
// [\p{Ll}\p{Lm}\p{Lo}\p{M}], with the reference's tables.
func isUpperish(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'A' && r <= 'Z'
	}
	return unicode.Is(refCategoryLu, r) || unicode.Is(refCategoryLt, r) || unicode.Is(refCategoryLm, r) ||
		unicode.Is(refCategoryLo, r) || unicode.Is(refCategoryM, r)
}

func isLowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z'
	}
	return unicode.Is(refCategoryLl, r) || unicode.Is(refCategoryLm, r) || unicode.Is(refCategoryLo, r) ||
		unicode.Is(refCategoryM, r)
}

// isWordPrefix is [^\r\n\p{L}\p{N}].
func isWordPrefix(r rune) bool { return r >= 0 && !isNL(r) && !isL(r) && !isN(r) }

// o200kWord matches upper*lower+ (first) or upper+lower* (second alternative)
// from k, then the optional contraction; it returns the end or -1.
func o200kWord(s string, k int, second bool) int {
	j := spanWhile(s, k, isUpperish, -1)
	var e int
	if second {
		if j == k {
			return -1
		}
		e = spanWhile(s, j, isLowerish, -1)
	} else {
		// upper* is greedy and gives characters back until lower+ can
		// match: lower+ starts at the last "lower" position in [k, j].
		x := -1
		if r, _ := decodeAt(s, j); r >= 0 && isLowerish(r) {
			x = j
		} else {
			for p := k; p < j; {
				r, w := decodeAt(s, p)
				if isLowerish(r) {
					x = p
				}
				p += w
			}
		}
		if x < 0 {
			return -1
		}
		e = spanWhile(s, x, isLowerish, -1)
	}
	return e + contraction(s, e, true)
}

// scanO200kNext is scanNext for the o200k pattern.
func scanO200kNext(s string, i int) int {
	r, w := decodeAt(s, i)
	for _, second := range []bool{false, true} {
		if isWordPrefix(r) {
			if e := o200kWord(s, i+w, second); e >= 0 {
				return e
			}
		}
		if e := o200kWord(s, i, second); e >= 0 {
			return e
		}
	}
	if isN(r) {
		return spanWhile(s, i, isN, 3)
	}
	j, rr := i, r
	if r == ' ' {
		rr, _ = decodeAt(s, i+1)
		j = i + 1
	}
	if rr >= 0 && isOther(rr) {
		end := spanWhile(s, j, isOther, -1)
		return spanWhile(s, end, func(r rune) bool { return isNL(r) || r == '/' }, -1)
	}
	end := spanWhile(s, i, isS, -1)
	lastNL := -1
	for k := i; k < end; {
		rk, wk := decodeAt(s, k)
		if isNL(rk) {
			lastNL = k + wk
		}
		k += wk
	}
	if lastNL >= 0 {
		return lastNL
	}
	return whitespaceTail(s, i)
}
