package tokenizer

import (
	"fmt"
	"strings"
)

// StreamDecoder turns a stream of ids into text deltas as they are
// generated. A delta never ends inside a UTF-8 character: bytes of an
// unfinished character wait for the next id. Concatenating every delta and
// the final Flush gives Decode of all the ids.
//
// For byte-level tokenizers (GPT-2, Llama-3, Qwen) Add is allocation-free for
// a token that is whole characters on its own, the common case; so it is for
// SentencePiece-style decoder chains (Replace/Metaspace, ByteFallback, Fuse,
// Strip: Llama-2, Mistral), where a byte-fallback run is emitted as soon as it
// forms whole characters. Other decoders use the reference's windowed
// re-decode (HF DecodeStream). A StreamDecoder is not safe for concurrent
// use; make one per sequence.
type StreamDecoder struct {
	skipSpecial bool

	// byte-level path
	t       *Tokenizer
	pending []byte
	out     []byte

	// SentencePiece-style path
	pieces *pieceDecoder
	ps     pieceStream

	// generic path (HF DecodeStream)
	decode      func(ids []int32, skipSpecial bool) (string, error)
	ids         []int32
	prefix      string
	prefixIndex int
}

// NewStreamDecoder returns an incremental decoder over this tokenizer.
func (t *Tokenizer) NewStreamDecoder(skipSpecial bool) *StreamDecoder {
	if t.byteDecode {
		return &StreamDecoder{t: t, skipSpecial: skipSpecial}
	}
	if t.pieces != nil {
		return &StreamDecoder{t: t, pieces: t.pieces, ps: t.pieces.newStream(), skipSpecial: skipSpecial}
	}
	return NewGenericStreamDecoder(t.Decode, skipSpecial)
}

// NewGenericStreamDecoder builds a StreamDecoder on any Decode function, with
// the reference's algorithm: re-decode a short window of ids and emit what
// follows the previous text once it does not end in U+FFFD.
func NewGenericStreamDecoder(decode func(ids []int32, skipSpecial bool) (string, error), skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{decode: decode, skipSpecial: skipSpecial}
}

// Add consumes one id and returns the text it completes ("" while a
// character is unfinished).
func (d *StreamDecoder) Add(id int32) (string, error) {
	if d.t == nil {
		return d.addGeneric(id)
	}
	t := d.t
	if t.skip(id, d.skipSpecial) {
		return "", nil
	}
	if d.pieces != nil {
		return d.pieces.add(&d.ps, id), nil
	}
	if len(d.pending) == 0 {
		if s := t.validTokens[id]; s != "" || len(t.rawTokens[id]) == 0 {
			return s, nil
		}
	}
	d.pending = append(d.pending, t.rawTokens[id]...)
	emit := len(d.pending) - incompleteTail(d.pending)
	if emit == 0 {
		return "", nil
	}
	d.out = appendLossyUTF8(d.out[:0], d.pending[:emit])
	d.pending = d.pending[:copy(d.pending, d.pending[emit:])]
	return string(d.out), nil
}

func (d *StreamDecoder) addGeneric(id int32) (string, error) {
	d.ids = append(d.ids, id)
	s, err := d.decode(d.ids, d.skipSpecial)
	if err != nil {
		return "", fmt.Errorf("stream decode: %w", err)
	}
	if len(s) <= len(d.prefix) || strings.HasSuffix(s, "\uFFFD") {
		return "", nil
	}
	if !strings.HasPrefix(s, d.prefix) {
		return "", fmt.Errorf("stream decode: text %q does not extend the previous %q", s, d.prefix)
	}
	delta := s[len(d.prefix):]
	newPrefixIndex := len(d.ids) - d.prefixIndex
	d.ids = append(d.ids[:0], d.ids[d.prefixIndex:]...)
	if d.prefix, err = d.decode(d.ids, d.skipSpecial); err != nil {
		return "", fmt.Errorf("stream decode: %w", err)
	}
	d.prefixIndex = newPrefixIndex
	return delta, nil
}

// Flush returns the text still held back (unfinished characters become
// U+FFFD) and resets the decoder for a new sequence.
func (d *StreamDecoder) Flush() string {
	if d.pieces != nil {
		s := d.pieces.flush(&d.ps)
		d.ps = d.pieces.newStream()
		return s
	}
	if d.t != nil {
		s := string(appendLossyUTF8(nil, d.pending))
		d.pending = d.pending[:0]
		return s
	}
	var rest string
	if s, err := d.decode(d.ids, d.skipSpecial); err == nil && len(s) > len(d.prefix) && strings.HasPrefix(s, d.prefix) {
		rest = s[len(d.prefix):]
	}
	d.ids, d.prefix, d.prefixIndex = d.ids[:0], "", 0
	return rest
}
