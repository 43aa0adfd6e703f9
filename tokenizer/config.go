package tokenizer

import (
	"encoding/json"
	"fmt"
)

// fileJSON is the subset of tokenizer.json that encoding and decoding need.
type fileJSON struct {
	Version       string           `json:"version"`
	Truncation    json.RawMessage  `json:"truncation"`
	Padding       json.RawMessage  `json:"padding"`
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
	Model         json.RawMessage  `json:"model"`
}

type addedTokenJSON struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// patternJSON is the {"String": ...} | {"Regex": ...} union used by Split,
// Replace normalizers and Replace decoders.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// componentJSON holds every field any normalizer, pre-tokenizer, processor or
// decoder may carry; Type selects which ones are meaningful.
type componentJSON struct {
	Type string `json:"type"`

	// Sequence members.
	Normalizers   []json.RawMessage `json:"normalizers"`
	PreTokenizers []json.RawMessage `json:"pretokenizers"`
	Processors    []json.RawMessage `json:"processors"`
	Decoders      []json.RawMessage `json:"decoders"`

	// ByteLevel.
	AddPrefixSpace *bool `json:"add_prefix_space"`
	TrimOffsets    *bool `json:"trim_offsets"`
	UseRegex       *bool `json:"use_regex"`

	// Split, Replace.
	Pattern  *patternJSON `json:"pattern"`
	Behavior string       `json:"behavior"`
	Invert   bool         `json:"invert"`
	Content  *string      `json:"content"`

	// Digits.
	IndividualDigits bool `json:"individual_digits"`

	// Metaspace.
	Replacement   string `json:"replacement"`
	PrependScheme string `json:"prepend_scheme"`
	Split         *bool  `json:"split"`

	// Prepend / Append normalizers.
	Prepend *string `json:"prepend"`
	Append  *string `json:"append"`

	// Strip normalizer (left/right) and Strip decoder (content/start/stop).
	Left  *bool `json:"left"`
	Right *bool `json:"right"`
	Start int   `json:"start"`
	Stop  int   `json:"stop"`

	// TemplateProcessing.
	Single        []templatePieceJSON            `json:"single"`
	SpecialTokens map[string]templateSpecialJSON `json:"special_tokens"`

	// RobertaProcessing / BertProcessing: [token, id].
	Sep []json.RawMessage `json:"sep"`
	Cls []json.RawMessage `json:"cls"`
}

type templatePieceJSON struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

type templateSpecialJSON struct {
	ID  string  `json:"id"`
	IDs []int32 `json:"ids"`
}

type modelJSON struct {
	Type                    string           `json:"type"`
	Dropout                 *float64         `json:"dropout"`
	UnkToken                *string          `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	FuseUnk                 bool             `json:"fuse_unk"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	Vocab                   map[string]int32 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"`
}

// isNull reports whether a raw JSON value is absent or null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// decodeComponent parses one component object; where names the field for errors
// (for example "pre_tokenizer.pretokenizers[1]").
func decodeComponent(raw json.RawMessage, where string) (*componentJSON, error) {
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("tokenizer.json %s: %w", where, err)
	}
	return &c, nil
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// buildSequence builds the members of a Sequence component in order (the
// member at index i is named where.field[i] in errors) and drops members that
// build to nothing, such as offset-only steps.
func buildSequence[T any](subs []json.RawMessage, where, field string, build func(sub json.RawMessage, at string, i int) (T, error)) ([]T, error) {
	var seq []T
	for i, sub := range subs {
		member, err := build(sub, fmt.Sprintf("%s.%s[%d]", where, field, i), i)
		if err != nil {
			return nil, err
		}
		if any(member) != nil {
			seq = append(seq, member)
		}
	}
	return seq, nil
}
