//go:build hftokenizers

package tokenizer

import (
	"fmt"
	"os"

	hf "github.com/daulet/tokenizers"
)

// HFTokenizer runs encode and decode in the Hugging Face Rust crate through
// github.com/daulet/tokenizers (cgo, linked against libtokenizers.a; build
// with -tags hftokenizers, see docs/tokenizer.md). Token look-ups and special
// tokens come from the pure-Go reading of the same tokenizer.json. Close
// releases the native tokenizer.
type HFTokenizer struct {
	native *hf.Tokenizer
	meta   *vocabInfo
}

var _ Interface = (*HFTokenizer)(nil)

// HFAvailable reports whether this binary was built with the Rust backend.
const HFAvailable = true

// LoadHF loads a tokenizer.json with the Rust backend.
func LoadHF(path string) (*HFTokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer (hftokenizers): %w", err)
	}
	data, err = maybeGunzip(path, data)
	if err != nil {
		return nil, err
	}
	meta, err := parseVocabInfo(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer (hftokenizers) %s: %w", path, err)
	}
	native, err := hf.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer (hftokenizers) %s: %w", path, err)
	}
	return &HFTokenizer{native: native, meta: meta}, nil
}

// Close frees the native tokenizer.
func (h *HFTokenizer) Close() error { return h.native.Close() }

// Encode returns the ids of text (the C API cannot carry NUL bytes).
func (h *HFTokenizer) Encode(text string, addSpecial bool) ([]int32, error) {
	for i := 0; i < len(text); i++ {
		if text[i] == 0 {
			return nil, fmt.Errorf("encode (hftokenizers): text holds a NUL byte")
		}
	}
	ids, _ := h.native.Encode(text, addSpecial)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out, nil
}

// Decode returns the text of ids.
func (h *HFTokenizer) Decode(ids []int32, skipSpecial bool) (string, error) {
	in := make([]uint32, len(ids))
	for i, id := range ids {
		if id < 0 {
			return "", fmt.Errorf("decode (hftokenizers): negative id %d at %d", id, i)
		}
		in[i] = uint32(id)
	}
	return h.native.Decode(in, skipSpecial), nil
}

// TokenToID looks a token up (added tokens first).
func (h *HFTokenizer) TokenToID(tok string) (int32, bool) { return h.meta.tokenToID(tok) }

// IDToToken returns the token string of an id.
func (h *HFTokenizer) IDToToken(id int32) (string, bool) { return h.meta.idToToken(id) }

// VocabSize is the number of distinct tokens, added tokens included (HF
// get_vocab_size(true)), counted from tokenizer.json.
func (h *HFTokenizer) VocabSize() int { return len(h.meta.byTok) }

// Special returns the special tokens guessed from tokenizer.json.
func (h *HFTokenizer) Special() SpecialTokens { return h.meta.special.clone() }

// NewStreamDecoder returns the reference's windowed stream decoder over the
// native Decode.
func (h *HFTokenizer) NewStreamDecoder(skipSpecial bool) *StreamDecoder {
	return NewGenericStreamDecoder(h.Decode, skipSpecial)
}
