package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"
)

// Interface is what toolrl needs from a tokenizer. *Tokenizer (pure Go) and,
// under the hftokenizers build tag, the Rust-backed *HFTokenizer implement it.
type Interface interface {
	// Encode returns the ids of text; addSpecial applies the post-processor
	// (for example a leading <s>).
	Encode(text string, addSpecial bool) ([]int32, error)
	// Decode returns the text of ids; skipSpecial drops special tokens.
	Decode(ids []int32, skipSpecial bool) (string, error)
	// TokenToID and IDToToken look up one token (added tokens included).
	TokenToID(tok string) (int32, bool)
	IDToToken(id int32) (string, bool)
	// VocabSize is the number of distinct tokens, added tokens included.
	VocabSize() int
	// Special returns the special tokens.
	Special() SpecialTokens
	// NewStreamDecoder returns an incremental decoder.
	NewStreamDecoder(skipSpecial bool) *StreamDecoder
}

// SpecialTokens names the control tokens of a tokenizer.
type SpecialTokens struct {
	// BOS, EOS and PAD are token ids, -1 when the tokenizer has none.
	BOS, EOS, PAD int32
	// EOSIDs holds every id that ends generation (EOS first when set); some
	// models have several (for example <|im_end|> and <|endoftext|>).
	EOSIDs []int32
	// Added lists tokenizer.json's added_tokens in file order.
	Added []AddedToken
}

// Tokenizer is a loaded tokenizer.json. It is immutable and safe for
// concurrent use.
type Tokenizer struct {
	added      []*AddedToken
	addedByID  map[int32]*AddedToken
	addedByTok map[string]int32
	specialSet map[string]bool

	rawAdded  *addedMatcher // added tokens with normalized=false
	normAdded *addedMatcher // normalized=true, matched on normalized text

	normalizer normalizer
	pre        preTokenizer
	model      *bpeModel
	post       postProcessor
	decoder    decoder
	truncation *truncation // nil: none
	padding    *padding    // nil: none
	nSpecial   int         // ids the post-processor adds to a single sequence

	vocabSize int
	idTokens  []string // id -> token (model or added)
	idKnown   []bool
	special   SpecialTokens

	// byteDecode: the decoder is ByteLevel alone, so every token maps to a
	// fixed byte string (rawTokens) and decoding is concatenation.
	byteDecode bool
	rawTokens  [][]byte
	// validTokens[id]: rawTokens[id] as a string when it is valid UTF-8 on its
	// own (lets the stream decoder return it without allocating).
	validTokens []string
	// pieces: the SentencePiece-style fast path (nil when the decoder has
	// another shape).
	pieces *pieceDecoder

	scratch sync.Pool
}

var _ Interface = (*Tokenizer)(nil)

// Load reads a tokenizer.json file (the path may end in .gz).
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	if data, err = maybeGunzip(path, data); err != nil {
		return nil, err
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return t, nil
}

// maybeGunzip inflates data when path ends in .gz.
func maybeGunzip(path string, data []byte) ([]byte, error) {
	if !strings.HasSuffix(path, ".gz") {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	if data, err = io.ReadAll(zr); err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return data, nil
}

// Parse builds a Tokenizer from the bytes of a tokenizer.json. A component it
// does not support is an error that names the component.
func Parse(data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	bl := newByteLevelTables()
	t := &Tokenizer{addedByID: map[int32]*AddedToken{}, addedByTok: map[string]int32{}, specialSet: map[string]bool{}}
	var err error
	if t.truncation, err = parseTruncation(f.Truncation); err != nil {
		return nil, err
	}
	if t.padding, err = parsePadding(f.Padding); err != nil {
		return nil, err
	}
	var vocab map[string]int32
	if isNull(f.Model) {
		return nil, fmt.Errorf("tokenizer.json: no model")
	}
	if t.model, vocab, err = buildBPE(f.Model, bl); err != nil {
		return nil, err
	}
	if t.normalizer, err = buildNormalizer(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if t.pre, err = buildPreTokenizer(f.PreTokenizer, "pre_tokenizer", true, bl); err != nil {
		return nil, err
	}
	if t.decoder, err = buildDecoder(f.Decoder, "decoder", bl); err != nil {
		return nil, err
	}
	for i, a := range f.AddedTokens {
		if a.Content == "" {
			continue
		}
		if a.ID < 0 {
			return nil, fmt.Errorf("tokenizer.json added_tokens[%d]: negative id %d", i, a.ID)
		}
		tok := &AddedToken{ID: a.ID, Content: a.Content, Special: a.Special, LStrip: a.LStrip, RStrip: a.RStrip, SingleWord: a.SingleWord, Normalized: a.Normalized}
		t.added = append(t.added, tok)
		t.addedByID[a.ID] = tok
		t.addedByTok[a.Content] = a.ID
		if a.Special {
			t.specialSet[a.Content] = true
		}
	}
	// HF matches special tokens first, then the others (order only matters
	// for identical contents).
	ordered := make([]*AddedToken, 0, len(t.added))
	for _, a := range t.added {
		if a.Special {
			ordered = append(ordered, a)
		}
	}
	for _, a := range t.added {
		if !a.Special {
			ordered = append(ordered, a)
		}
	}
	var raw, norm []*AddedToken
	for _, a := range ordered {
		if a.Normalized {
			norm = append(norm, a)
		} else {
			raw = append(raw, a)
		}
	}
	t.rawAdded = newAddedMatcher(raw, func(a *AddedToken) string { return a.Content })
	normPatterns := map[*AddedToken]string{}
	for _, a := range norm {
		p := a.Content
		if t.normalizer != nil {
			if p, err = t.normalizer.normalize(p); err != nil {
				return nil, fmt.Errorf("normalize added token %q: %w", a.Content, err)
			}
		}
		normPatterns[a] = p
	}
	t.normAdded = newAddedMatcher(norm, func(a *AddedToken) string { return normPatterns[a] })
	// TemplateProcessing carries its special tokens' ids itself.
	if t.post, err = buildPostProcessor(f.PostProcessor, "post_processor"); err != nil {
		return nil, err
	}
	if t.post != nil {
		t.nSpecial = len(t.post.process(nil))
	}
	t.buildIDTable(vocab)
	// The reference keeps a normalized added token under its normalized form
	// for id -> token (and so for decoding), its original one for token -> id.
	for a, p := range normPatterns {
		t.idTokens[a.ID] = p
	}
	t.buildFastDecode(bl)
	t.special = guessSpecial(t.added, t.addedByTok, f.PostProcessor)
	t.scratch.New = func() any { return &bpeScratch{} }
	return t, nil
}

func (t *Tokenizer) buildIDTable(vocab map[string]int32) {
	maxID := int32(-1)
	distinct := make(map[string]struct{}, len(vocab)+len(t.added))
	for tok, id := range vocab {
		maxID = max(maxID, id)
		distinct[tok] = struct{}{}
	}
	for _, a := range t.added {
		maxID = max(maxID, a.ID)
		distinct[a.Content] = struct{}{}
	}
	t.vocabSize = len(distinct)
	t.idTokens = make([]string, maxID+1)
	t.idKnown = make([]bool, maxID+1)
	for tok, id := range vocab {
		if id >= 0 {
			t.idTokens[id], t.idKnown[id] = tok, true
		}
	}
	for _, a := range t.added {
		t.idTokens[a.ID], t.idKnown[a.ID] = a.Content, true
	}
}

func (t *Tokenizer) buildFastDecode(bl *byteLevelTables) {
	_, isBL := t.decoder.(byteLevelDecoder)
	if seq, ok := t.decoder.(sequenceDecoder); ok && len(seq) == 1 {
		_, isBL = seq[0].(byteLevelDecoder)
	}
	if !isBL {
		t.pieces = buildPieceDecoder(t.decoder, t.idTokens, t.idKnown)
		return
	}
	t.byteDecode = true
	t.rawTokens = make([][]byte, len(t.idTokens))
	t.validTokens = make([]string, len(t.idTokens))
	for id, tok := range t.idTokens {
		if !t.idKnown[id] {
			continue
		}
		raw, _ := bl.decodeToken(tok)
		t.rawTokens[id] = raw
		if utf8.Valid(raw) {
			t.validTokens[id] = string(raw)
		}
	}
}

// Encode returns the ids of text. With addSpecial the post-processor adds its
// special tokens (for example Llama's <s>). Added tokens in the text (such as
// <|im_start|>) are always recognised. text must be valid UTF-8.
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("encode: text is not valid UTF-8")
	}
	scratch := t.scratch.Get().(*bpeScratch)
	defer t.scratch.Put(scratch)
	pieces := scratch.keepPieces(splitAdded(piece{text: text, id: -1, first: true}, t.rawAdded, scratch.nextPieces()))
	pieces, err := splitEach(pieces, scratch, func(p piece, out []piece) ([]piece, error) {
		if t.normalizer != nil {
			var err error
			if p.text, err = t.normalizer.normalize(p.text); err != nil {
				return nil, err
			}
		}
		return splitAdded(p, t.normAdded, out), nil
	})
	if err != nil {
		return nil, fmt.Errorf("encode: normalize: %w", err)
	}
	if t.pre != nil {
		if pieces, err = t.pre.preTokenize(pieces, scratch); err != nil {
			return nil, fmt.Errorf("encode: pre-tokenize: %w", err)
		}
	}
	ids := make([]int32, 0, len(text)/3+4)
	for _, p := range pieces {
		if p.id >= 0 {
			ids = append(ids, p.id)
			continue
		}
		if ids, err = t.model.tokenize(p, ids, scratch); err != nil {
			return nil, fmt.Errorf("encode: %w", err)
		}
	}
	// As the reference's post_process: truncate (leaving room for the
	// special tokens), add them, then pad.
	if t.truncation != nil {
		n := 0
		if addSpecial {
			n = t.nSpecial
		}
		ids = t.truncation.apply(ids, n)
	}
	if addSpecial && t.post != nil {
		ids = t.post.process(ids)
	}
	if t.padding != nil {
		ids = t.padding.apply(ids)
	}
	return ids, nil
}

// Decode returns the text of ids, as the reference does: unknown ids are
// dropped, skipSpecial drops special added tokens, ill-formed UTF-8 becomes
// U+FFFD.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) (string, error) {
	if t.byteDecode {
		buf := make([]byte, 0, len(ids)*4)
		for _, id := range ids {
			if t.skip(id, skipSpecial) {
				continue
			}
			buf = append(buf, t.rawTokens[id]...)
		}
		if utf8.Valid(buf) {
			return string(buf), nil
		}
		return string(appendLossyUTF8(nil, buf)), nil
	}
	if t.pieces != nil {
		return t.pieces.decode(ids, func(id int32) bool { return t.skip(id, skipSpecial) }), nil
	}
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		if t.skip(id, skipSpecial) {
			continue
		}
		tokens = append(tokens, t.idTokens[id])
	}
	if t.decoder == nil {
		return strings.Join(tokens, " "), nil
	}
	out, err := t.decoder.decodeChain(tokens)
	if err != nil {
		return "", fmt.Errorf("decode: %w", err)
	}
	return strings.Join(out, ""), nil
}

// skip reports whether Decode leaves id out: unknown, or special while
// skipSpecial (HF tests the token's content against the special set).
func (t *Tokenizer) skip(id int32, skipSpecial bool) bool {
	if id < 0 || int(id) >= len(t.idKnown) || !t.idKnown[id] {
		return true
	}
	return skipSpecial && t.specialSet[t.idTokens[id]]
}

// TokenToID returns the id of a token (added tokens first, then the model's
// vocabulary).
func (t *Tokenizer) TokenToID(tok string) (int32, bool) {
	if id, ok := t.addedByTok[tok]; ok {
		return id, true
	}
	id, ok := t.model.vocab[tok]
	return id, ok
}

// IDToToken returns the token string of an id (in the model's alphabet, for
// example "Ġworld" for byte-level BPE).
func (t *Tokenizer) IDToToken(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.idKnown) || !t.idKnown[id] {
		return "", false
	}
	return t.idTokens[id], true
}

// VocabSize is the number of distinct tokens, added tokens included (HF's
// get_vocab_size(true)). Ids run from 0 to MaxID.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// MaxID is the largest id the tokenizer can produce.
func (t *Tokenizer) MaxID() int32 { return int32(len(t.idTokens) - 1) }

// Special returns the special tokens guessed from tokenizer.json alone; use
// LoadSpecialFromConfig to read the model's own configuration.
func (t *Tokenizer) Special() SpecialTokens {
	return t.special.clone()
}
