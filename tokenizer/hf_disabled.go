//go:build !hftokenizers

package tokenizer

// HFTokenizer would run the Hugging Face Rust crate through
// github.com/daulet/tokenizers; this binary was built without the
// hftokenizers build tag, so LoadHF always fails.
type HFTokenizer struct{}

var _ Interface = (*HFTokenizer)(nil)

// HFAvailable reports whether this binary was built with the Rust backend.
const HFAvailable = false

// LoadHF fails with ErrHFDisabled: the build lacks the hftokenizers tag.
func LoadHF(path string) (*HFTokenizer, error) { return nil, ErrHFDisabled }

// Close does nothing.
func (h *HFTokenizer) Close() error { return nil }

// Encode fails with ErrHFDisabled.
func (h *HFTokenizer) Encode(string, bool) ([]int32, error) { return nil, ErrHFDisabled }

// Decode fails with ErrHFDisabled.
func (h *HFTokenizer) Decode([]int32, bool) (string, error) { return "", ErrHFDisabled }

// TokenToID finds nothing.
func (h *HFTokenizer) TokenToID(string) (int32, bool) { return -1, false }

// IDToToken finds nothing.
func (h *HFTokenizer) IDToToken(int32) (string, bool) { return "", false }

// VocabSize is 0.
func (h *HFTokenizer) VocabSize() int { return 0 }

// Special has no tokens.
func (h *HFTokenizer) Special() SpecialTokens { return SpecialTokens{BOS: -1, EOS: -1, PAD: -1} }

// NewStreamDecoder returns a decoder whose Add fails with ErrHFDisabled.
func (h *HFTokenizer) NewStreamDecoder(skipSpecial bool) *StreamDecoder {
	return NewGenericStreamDecoder(h.Decode, skipSpecial)
}
