package tokenizer

import (
	"encoding/json"
	"fmt"
)

// vocabInfo is the part of a tokenizer.json that look-ups need, read without
// building the pipeline: the Rust backend uses it for TokenToID, IDToToken
// and Special, so it works for models the pure-Go pipeline rejects.
type vocabInfo struct {
	byTok   map[string]int32
	byID    map[int32]string
	special SpecialTokens
}

func parseVocabInfo(data []byte) (*vocabInfo, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	var m struct {
		Vocab json.RawMessage `json:"vocab"`
	}
	if err := json.Unmarshal(f.Model, &m); err != nil {
		return nil, fmt.Errorf("tokenizer.json model: %w", err)
	}
	v := &vocabInfo{byTok: map[string]int32{}, byID: map[int32]string{}}
	var asMap map[string]int32
	if err := json.Unmarshal(m.Vocab, &asMap); err == nil {
		v.byTok = asMap
	} else {
		// Unigram: [[token, score], ...], ids are positions.
		var list [][2]json.RawMessage
		if err := json.Unmarshal(m.Vocab, &list); err != nil {
			return nil, fmt.Errorf("tokenizer.json model.vocab: neither a map nor a list of [token, score]")
		}
		for i, e := range list {
			var tok string
			if err := json.Unmarshal(e[0], &tok); err != nil {
				return nil, fmt.Errorf("tokenizer.json model.vocab[%d]: %w", i, err)
			}
			v.byTok[tok] = int32(i)
		}
	}
	for tok, id := range v.byTok {
		v.byID[id] = tok
	}
	var added []*AddedToken
	addedByTok := map[string]int32{}
	for _, a := range f.AddedTokens {
		added = append(added, &AddedToken{ID: a.ID, Content: a.Content, Special: a.Special, LStrip: a.LStrip, RStrip: a.RStrip, SingleWord: a.SingleWord, Normalized: a.Normalized})
		addedByTok[a.Content] = a.ID
		v.byTok[a.Content] = a.ID
		v.byID[a.ID] = a.Content
	}
	v.special = guessSpecial(added, addedByTok, f.PostProcessor)
	return v, nil
}

func (v *vocabInfo) tokenToID(tok string) (int32, bool) {
	id, ok := v.byTok[tok]
	return id, ok
}

func (v *vocabInfo) idToToken(id int32) (string, bool) {
	tok, ok := v.byID[id]
	return tok, ok
}
