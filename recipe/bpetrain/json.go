package bpetrain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// quote JSON-encodes s without HTML escaping.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err) // a string always encodes
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// MarshalJSON writes the standard tokenizer.json document. The output is
// deterministic: vocab in id order, merges in rank order.
func (t *Tokenizer) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	sp := quote(SpecialToken)
	id := t.SpecialID()
	fmt.Fprintf(&b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n")
	fmt.Fprintf(&b, "  \"added_tokens\": [\n    {\"id\": %d, \"content\": %s, \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}\n  ],\n", id, sp)
	fmt.Fprintf(&b, "  \"normalizer\": null,\n")
	fmt.Fprintf(&b, "  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": %s}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false}]},\n", quote(Pattern))
	fmt.Fprintf(&b, "  \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": %s, \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [{\"SpecialToken\": {\"id\": %s, \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": %s, \"type_id\": 1}}, {\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}], \"special_tokens\": {%s: {\"id\": %s, \"ids\": [%d], \"tokens\": [%s]}}},\n", sp, sp, sp, sp, sp, id, sp)
	fmt.Fprintf(&b, "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false},\n")
	fmt.Fprintf(&b, "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n    \"vocab\": {\n")
	for i, v := range t.Vocab {
		if i == int(id) {
			continue // added token, not in the BPE vocab
		}
		sep := ","
		if i == len(t.Vocab)-2 {
			sep = ""
		}
		fmt.Fprintf(&b, "      %s: %d%s\n", quote(v), i, sep)
	}
	fmt.Fprintf(&b, "    },\n    \"merges\": [\n")
	for i, m := range t.Merges {
		sep := ","
		if i == len(t.Merges)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "      %s%s\n", quote(m[0]+" "+m[1]), sep)
	}
	fmt.Fprintf(&b, "    ]\n  }\n}\n")
	return b.Bytes(), nil
}

// WriteFile writes tokenizer.json to path.
func (t *Tokenizer) WriteFile(path string) error {
	data, err := t.MarshalJSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write tokenizer %s: %w", path, err)
	}
	return nil
}

// tokenizerFile is the part of tokenizer.json that Load reads back.
type tokenizerFile struct {
	AddedTokens []struct {
		ID      int32  `json:"id"`
		Content string `json:"content"`
	} `json:"added_tokens"`
	Model struct {
		Type   string           `json:"type"`
		Vocab  map[string]int32 `json:"vocab"`
		Merges []string         `json:"merges"`
	} `json:"model"`
}

// Read loads a tokenizer.json written by WriteFile.
func Read(r io.Reader) (*Tokenizer, error) {
	var f tokenizerFile
	if err := json.NewDecoder(r).Decode(&f); err != nil {
		return nil, fmt.Errorf("read tokenizer.json: %w", err)
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("read tokenizer.json: model type %q, want BPE", f.Model.Type)
	}
	n := len(f.Model.Vocab) + len(f.AddedTokens)
	vocab := make([]string, n)
	for s, id := range f.Model.Vocab {
		if id < 0 || int(id) >= n {
			return nil, fmt.Errorf("read tokenizer.json: vocab id %d of %q out of range", id, s)
		}
		vocab[id] = s
	}
	for _, a := range f.AddedTokens {
		if int(a.ID) != n-1 || a.Content != SpecialToken {
			return nil, fmt.Errorf("read tokenizer.json: added token %q id %d, want %q id %d", a.Content, a.ID, SpecialToken, n-1)
		}
		vocab[a.ID] = a.Content
	}
	merges := make([][2]string, len(f.Model.Merges))
	for i, m := range f.Model.Merges {
		l, r, ok := strings.Cut(m, " ")
		if !ok {
			return nil, fmt.Errorf("read tokenizer.json: merge %d %q has no space", i, m)
		}
		merges[i] = [2]string{l, r}
	}
	return newTokenizer(vocab, merges), nil
}

// Load reads tokenizer.json from path.
func Load(path string) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
