package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// pieceDecoder is the fast path for SentencePiece-style decoder chains:
// per-token rewrites (Replace with a string pattern, Metaspace), then
// optionally ByteFallback, Fuse and a leading Strip — the shape Llama-2,
// Mistral and their kin use. Every token then decodes to a fixed string (or
// one byte), so Decode is concatenation and the stream decoder needs no
// re-decoding.
type pieceDecoder struct {
	// text[id] is the token's decoded text anywhere but first; firstText[id]
	// at the head of the sequence (Metaspace drops its replacement there).
	text, firstText []string
	// byteVal[id] is the byte a <0xNN> token stands for, or -1.
	byteVal []int16
	// stripRune/stripCount: a Strip decoder after Fuse removes up to
	// stripCount leading stripRune runes from the whole text.
	stripRune  rune
	stripCount int
}

// buildPieceDecoder returns nil when the chain has another shape.
func buildPieceDecoder(d decoder, idTokens []string, idKnown []bool) *pieceDecoder {
	var chain []decoder
	if seq, ok := d.(sequenceDecoder); ok {
		chain = seq
	} else if d != nil {
		chain = []decoder{d}
	}
	var rewrites []decoder
	byteFallback, fused := false, false
	p := &pieceDecoder{}
	for _, c := range chain {
		switch c := c.(type) {
		case replaceDecoder:
			if _, ok := c.r.pattern.(stringMatcher); !ok || byteFallback || fused {
				return nil
			}
			rewrites = append(rewrites, c)
		case metaspaceDecoder:
			if byteFallback || fused {
				return nil
			}
			rewrites = append(rewrites, c)
		case byteFallbackDecoder:
			if byteFallback || fused {
				return nil
			}
			byteFallback = true
		case fuseDecoder:
			fused = true
		case stripDecoder:
			if !fused || c.stop != 0 || p.stripCount != 0 {
				return nil
			}
			p.stripRune, p.stripCount = c.content, c.start
		default:
			return nil
		}
	}
	if len(rewrites) == 0 && !byteFallback {
		return nil
	}
	n := len(idTokens)
	p.text, p.firstText, p.byteVal = make([]string, n), make([]string, n), make([]int16, n)
	for id, tok := range idTokens {
		p.byteVal[id] = -1
		if !idKnown[id] {
			continue
		}
		if byteFallback {
			if b, ok := parseByteToken(tok); ok {
				p.byteVal[id] = int16(b)
				continue
			}
		}
		p.text[id] = applyRewrites(rewrites, tok, false)
		p.firstText[id] = applyRewrites(rewrites, tok, true)
	}
	return p
}

func applyRewrites(rewrites []decoder, tok string, first bool) string {
	for _, r := range rewrites {
		switch r := r.(type) {
		case replaceDecoder:
			tok, _ = r.r.normalize(tok)
		case metaspaceDecoder:
			var b strings.Builder
			for _, c := range tok {
				if c == r.replacement {
					if first && r.dropFirst {
						continue
					}
					c = ' '
				}
				b.WriteRune(c)
			}
			tok = b.String()
		}
	}
	return tok
}

// decode is Decode for kept (already filtered) ids.
func (p *pieceDecoder) decode(ids []int32, skip func(int32) bool) string {
	buf := make([]byte, 0, len(ids)*4)
	var run []byte
	first := true
	flush := func() {
		buf = appendByteRun(buf, run)
		run = run[:0]
	}
	for _, id := range ids {
		if skip(id) {
			continue
		}
		if b := p.byteVal[id]; b >= 0 {
			run = append(run, byte(b))
		} else {
			flush()
			if first {
				buf = append(buf, p.firstText[id]...)
			} else {
				buf = append(buf, p.text[id]...)
			}
		}
		first = false
	}
	flush()
	s := string(buf)
	for k := 0; k < p.stripCount; k++ {
		r, w := utf8.DecodeRuneInString(s)
		if w == 0 || r != p.stripRune {
			break
		}
		s = s[w:]
	}
	return s
}

// appendByteRun is ByteFallback's rule: a run of byte tokens that is valid
// UTF-8 is its text, otherwise one U+FFFD per byte.
func appendByteRun(dst, run []byte) []byte {
	if len(run) == 0 {
		return dst
	}
	if utf8.Valid(run) {
		return append(dst, run...)
	}
	for range run {
		dst = append(dst, "\uFFFD"...)
	}
	return dst
}

// pieceStream is the stream state over a pieceDecoder.
type pieceStream struct {
	started   bool // a token has been seen (Metaspace's first-token rule)
	stripLeft int  // leading strip runes still to remove
	emitted   bool // text has been emitted (the strip window is over)
	// runInvalid: the current byte-fallback run is already invalid, so
	// ByteFallback turns each of its bytes into U+FFFD.
	runInvalid bool
	run        []byte
	out        []byte
}

func (p *pieceDecoder) newStream() pieceStream { return pieceStream{stripLeft: p.stripCount} }

func (p *pieceDecoder) add(st *pieceStream, id int32) string {
	first := !st.started
	st.started = true
	if b := p.byteVal[id]; b >= 0 {
		if st.runInvalid {
			return p.stripString(st, "\uFFFD")
		}
		st.run = append(st.run, byte(b))
		// Emit a run as soon as it is whole valid characters (as the
		// reference's DecodeStream does).
		if utf8.Valid(st.run) {
			s := p.strip(st, st.run)
			st.run = st.run[:0]
			return s
		}
		if incompleteTail(st.run) > 0 && utf8.Valid(st.run[:len(st.run)-incompleteTail(st.run)]) {
			return ""
		}
		// Invalid: ByteFallback makes the run U+FFFD per byte, to its end.
		st.out = appendByteRun(st.out[:0], st.run)
		st.run = st.run[:0]
		st.runInvalid = true
		return p.strip(st, st.out)
	}
	st.runInvalid = false
	var prefix string
	if len(st.run) > 0 {
		st.out = appendByteRun(st.out[:0], st.run)
		st.run = st.run[:0]
		prefix = p.strip(st, st.out)
	}
	text := p.text[id]
	if first {
		text = p.firstText[id]
	}
	text = p.stripString(st, text)
	if prefix == "" {
		return text
	}
	return prefix + text
}

// strip removes the leading strip runes from bytes about to be emitted and
// returns them as a string.
func (p *pieceDecoder) strip(st *pieceStream, b []byte) string {
	return p.stripString(st, string(b))
}

// stripString applies the Strip decoder to the head of the stream: while
// nothing but strip runes has gone out, up to stripCount of them are dropped.
func (p *pieceDecoder) stripString(st *pieceStream, s string) string {
	for st.stripLeft > 0 && !st.emitted && s != "" {
		r, w := utf8.DecodeRuneInString(s)
		if r != p.stripRune {
			break
		}
		s = s[w:]
		st.stripLeft--
	}
	if s != "" {
		st.emitted = true
	}
	return s
}

func (p *pieceDecoder) flush(st *pieceStream) string {
	st.runInvalid = false
	if len(st.run) == 0 {
		return ""
	}
	st.out = appendByteRun(st.out[:0], st.run)
	st.run = st.run[:0]
	return p.strip(st, st.out)
}
