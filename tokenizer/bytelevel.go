package tokenizer

import "unicode/utf8"

// byteLevelTables maps each byte to the printable rune GPT-2's byte-level BPE
// uses for it, and back (bytes_to_unicode in openai/gpt-2 encoder.py).
type byteLevelTables struct {
	byteToRune [256]rune
	runeToByte map[rune]byte
	// byteToString[b] is string(byteToRune[b]), precomputed.
	byteToString [256]string
}

func newByteLevelTables() *byteLevelTables {
	t := &byteLevelTables{runeToByte: make(map[rune]byte, 256)}
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = rune(256 + n)
			n++
		}
		t.byteToRune[b] = r
		t.runeToByte[r] = byte(b)
		t.byteToString[b] = string(r)
	}
	return t
}

// encode maps raw bytes to their byte-level string.
func (t *byteLevelTables) encode(s string) string {
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		buf = utf8.AppendRune(buf, t.byteToRune[s[i]])
	}
	return string(buf)
}

// decodeToken maps a byte-level token back to raw bytes. ok is false when the
// token holds a rune outside the byte-level alphabet; HF then keeps the token's
// UTF-8 bytes as they are.
func (t *byteLevelTables) decodeToken(tok string) (raw []byte, ok bool) {
	raw = make([]byte, 0, len(tok))
	for _, r := range tok {
		b, found := t.runeToByte[r]
		if !found {
			return []byte(tok), false
		}
		raw = append(raw, b)
	}
	return raw, true
}

// appendLossyUTF8 appends src to dst, replacing every ill-formed sequence by
// U+FFFD with the same boundaries as Rust's String::from_utf8_lossy (one
// replacement per maximal prefix of a valid sequence, the Unicode "substitution
// of maximal subparts" practice). Go's own decoders replace byte by byte, which
// differs on truncated multi-byte sequences.
func appendLossyUTF8(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		n, valid := utf8SeqLen(src[i:])
		if valid {
			dst = append(dst, src[i:i+n]...)
		} else {
			dst = append(dst, "\uFFFD"...)
		}
		i += n
	}
	return dst
}

// utf8SeqLen returns the length of the sequence starting at p[0] and whether it
// is a valid character. An invalid sequence's length is that of its maximal
// valid prefix (at least 1). A truncated but so-far valid sequence at the end
// of p reports its length and valid=false.
func utf8SeqLen(p []byte) (n int, valid bool) {
	b := p[0]
	if b < 0x80 {
		return 1, true
	}
	var width int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case b >= 0xC2 && b <= 0xDF:
		width = 2
	case b == 0xE0:
		width, lo = 3, 0xA0
	case b >= 0xE1 && b <= 0xEC, b == 0xEE, b == 0xEF:
		width = 3
	case b == 0xED:
		width, hi = 3, 0x9F
	case b == 0xF0:
		width, lo = 4, 0x90
	case b >= 0xF1 && b <= 0xF3:
		width = 4
	case b == 0xF4:
		width, hi = 4, 0x8F
	default:
		return 1, false
	}
	for k := 1; k < width; k++ {
		if k >= len(p) {
			return k, false
		}
		c := p[k]
		if k == 1 {
			if c < lo || c > hi {
				return 1, false
			}
		} else if c < 0x80 || c > 0xBF {
			return k, false
		}
	}
	return width, true
}

// incompleteTail returns how many bytes at the end of p form a truncated but
// so-far valid UTF-8 sequence (0..3): bytes a stream decoder must hold back
// because the next token may complete them.
func incompleteTail(p []byte) int {
	for k := 1; k <= 3 && k <= len(p); k++ {
		start := len(p) - k
		b := p[start]
		if b < 0x80 {
			return 0
		}
		if b >= 0xC0 { // a lead byte
			if b < 0xC2 || b > 0xF4 {
				return 0
			}
			n, valid := utf8SeqLen(p[start:])
			if !valid && n == k {
				return k
			}
			return 0
		}
	}
	return 0
}
