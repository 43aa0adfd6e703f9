package llama

import (
	"encoding/json"
	"fmt"
)

// DefaultChatTemplate is a ChatML template (the one SmolLM2 and Qwen2 use):
// each message is <|im_start|>role\ncontent<|im_end|>\n, and the generation
// prompt opens an assistant turn.
const DefaultChatTemplate = "{% for message in messages %}" +
	"{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
	"{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// byteToUnicode is GPT-2's reversible map from bytes to printable runes, the
// alphabet of byte-level BPE vocabularies.
func byteToUnicode() [256]rune {
	var out [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			out[b] = rune(b)
		} else {
			out[b] = rune(256 + n)
			n++
		}
	}
	return out
}

// addedToken is an entry of tokenizer.json's added_tokens: its id and its
// AddedToken kwargs (what tokenizer_config.json's added_tokens_decoder
// holds, keyed by the id).
type addedToken struct {
	ID int `json:"id"`
	addedTokenKwargs
}

type addedTokenKwargs struct {
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// byteSpecials are the default tokenizer's special tokens, from id
// ByteEndOfText on.
var byteSpecials = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}

// ByteTokenizerJSON returns the project's fallback tokenizer.json: a
// byte-level BPE with no merges, where id b (0..255) is byte b, followed by
// the specials <|endoftext|> (256), <|im_start|> (257) and <|im_end|> (258).
// It is deterministic and needs no files, so random models are self-contained.
func ByteTokenizerJSON() []byte {
	vocab := make(map[string]int, 256)
	for b, r := range byteToUnicode() {
		vocab[string(r)] = b
	}
	var added []addedToken
	for i, s := range byteSpecials {
		added = append(added, addedToken{ID: ByteEndOfText + i, addedTokenKwargs: addedTokenKwargs{Content: s, Special: true}})
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	doc := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   added,
		"normalizer":     nil,
		"pre_tokenizer":  byteLevel,
		"post_processor": byteLevel,
		"decoder":        byteLevel,
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": []string{},
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // static document: cannot fail
	}
	return append(b, '\n')
}

// tokenizerVocab reads the id of every token (model vocab and added tokens)
// of a tokenizer.json document.
func tokenizerVocab(tok []byte) (map[int]string, []addedToken, error) {
	var doc struct {
		AddedTokens []addedToken `json:"added_tokens"`
		Model       struct {
			Type  string          `json:"type"`
			Vocab json.RawMessage `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(tok, &doc); err != nil {
		return nil, nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	ids := map[int]string{}
	if len(doc.Model.Vocab) > 0 {
		var m map[string]int
		if err := json.Unmarshal(doc.Model.Vocab, &m); err == nil {
			for s, id := range m {
				ids[id] = s
			}
		} else {
			// Unigram vocabularies are [[piece, score], ...], ids by position.
			var list [][]any
			if err := json.Unmarshal(doc.Model.Vocab, &list); err != nil {
				return nil, nil, fmt.Errorf("tokenizer.json: model.vocab is neither a map nor a list: %w", err)
			}
			for i, e := range list {
				if len(e) > 0 {
					s, _ := e[0].(string)
					ids[i] = s
				}
			}
		}
	}
	for _, a := range doc.AddedTokens {
		ids[a.ID] = a.Content
	}
	return ids, doc.AddedTokens, nil
}

// Candidate special tokens, most specific first, for tokenizers that come
// without a tokenizer_config.json.
var (
	eosCandidates = []string{"<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"}
	bosCandidates = []string{"<|im_start|>", "<|begin_of_text|>", "<s>", "<bos>", "<|endoftext|>"}
	padCandidates = []string{"<|endoftext|>", "<pad>", "<|pad|>", "<|finetune_right_pad_id|>"}
)

// TokenizerSpecials finds the bos, eos and pad ids of a tokenizer: from the
// token strings of tokenizerConfig (tokenizer_config.json, may be nil) when
// it names them, otherwise from well-known special tokens of the tokenizer
// (ChatML's <|im_end|> first for eos). Missing ones are returned empty; pad
// falls back to eos. It also returns the vocabulary size the tokenizer
// needs (largest id + 1).
func TokenizerSpecials(tok, tokenizerConfig []byte) (bos, eos, pad TokenIDs, size int, err error) {
	vocab, _, err := tokenizerVocab(tok)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	byContent := map[string]int{}
	for id, s := range vocab {
		byContent[s] = id
		size = max(size, id+1)
	}
	named := map[string]string{}
	if tokenizerConfig != nil {
		var tc map[string]any
		if err := json.Unmarshal(tokenizerConfig, &tc); err != nil {
			return nil, nil, nil, 0, fmt.Errorf("tokenizer_config.json: %w", err)
		}
		for _, k := range []string{"bos_token", "eos_token", "pad_token"} {
			switch v := tc[k].(type) {
			case string:
				named[k] = v
			case map[string]any: // {"content": "...", ...}
				if s, ok := v["content"].(string); ok {
					named[k] = s
				}
			}
		}
	}
	find := func(key string, candidates []string) TokenIDs {
		if s, ok := named[key]; ok {
			if id, ok := byContent[s]; ok {
				return TokenIDs{id}
			}
		}
		for _, c := range candidates {
			if id, ok := byContent[c]; ok {
				return TokenIDs{id}
			}
		}
		return nil
	}
	bos, eos, pad = find("bos_token", bosCandidates), find("eos_token", eosCandidates), find("pad_token", padCandidates)
	if pad == nil {
		pad = eos
	}
	return bos, eos, pad, size, nil
}
