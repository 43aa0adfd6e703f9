package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Common names of control tokens, most specific first, used when
// tokenizer.json alone must say which token is BOS, EOS or PAD.
var (
	bosNames = []string{"<|begin_of_text|>", "<s>", "<bos>", "<|startoftext|>", "<｜begin▁of▁sentence｜>", "[CLS]"}
	eosNames = []string{"<|end_of_text|>", "</s>", "<eos>", "<|endoftext|>", "<｜end▁of▁sentence｜>", "[SEP]"}
	padNames = []string{"<pad>", "<|pad|>", "[PAD]", "<|finetune_right_pad_id|>"}
)

// guessSpecial reads BOS/EOS from the post-processor template when it has
// them, else from well-known token names.
func guessSpecial(added []*AddedToken, addedByTok map[string]int32, post json.RawMessage) SpecialTokens {
	s := SpecialTokens{BOS: -1, EOS: -1, PAD: -1}
	for _, a := range added {
		s.Added = append(s.Added, *a)
	}
	if !isNull(post) {
		var c componentJSON
		if json.Unmarshal(post, &c) == nil && c.Type == "TemplateProcessing" {
			seenSeq := false
			for _, p := range c.Single {
				if p.Sequence != nil {
					seenSeq = true
					continue
				}
				if p.SpecialToken == nil {
					continue
				}
				st := c.SpecialTokens[p.SpecialToken.ID]
				if len(st.IDs) != 1 {
					continue
				}
				if !seenSeq && s.BOS < 0 {
					s.BOS = st.IDs[0]
				}
				if seenSeq && s.EOS < 0 {
					s.EOS = st.IDs[0]
				}
			}
		}
	}
	byName := func(names []string) int32 {
		for _, n := range names {
			if id, ok := addedByTok[n]; ok {
				return id
			}
		}
		return -1
	}
	if s.BOS < 0 {
		s.BOS = byName(bosNames)
	}
	if s.EOS < 0 {
		s.EOS = byName(eosNames)
	}
	s.PAD = byName(padNames)
	if s.EOS >= 0 {
		s.EOSIDs = []int32{s.EOS}
	}
	return s
}

// tokenField is tokenizer_config.json's bos_token/eos_token/pad_token: a
// string or an object with "content".
type tokenField struct{ content string }

func (f *tokenField) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if err := json.Unmarshal(b, &f.content); err == nil {
		return nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	f.content = obj.Content
	return nil
}

// idList is generation_config.json's eos_token_id: an int or a list of ints.
type idList []int32

func (l *idList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var one int32
	if err := json.Unmarshal(b, &one); err == nil {
		*l = idList{one}
		return nil
	}
	var many []int32
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*l = many
	return nil
}

// LoadSpecialFromConfig refines tok.Special() with the model's own
// configuration in dir: tokenizer_config.json (bos_token, eos_token,
// pad_token) and generation_config.json (bos_token_id, eos_token_id — an id or
// a list — and pad_token_id), the latter winning. Missing files are skipped;
// a malformed one is an error naming the file.
func LoadSpecialFromConfig(dir string, tok Interface) (SpecialTokens, error) {
	s := tok.Special()
	var tc struct {
		BOS tokenField `json:"bos_token"`
		EOS tokenField `json:"eos_token"`
		PAD tokenField `json:"pad_token"`
	}
	path := filepath.Join(dir, "tokenizer_config.json")
	if ok, err := readJSONIfExists(path, &tc); err != nil {
		return s, err
	} else if ok {
		set := func(dst *int32, f tokenField, name string) error {
			if f.content == "" {
				return nil
			}
			id, ok := tok.TokenToID(f.content)
			if !ok {
				return fmt.Errorf("%s: %s %q is not in the vocabulary", path, name, f.content)
			}
			*dst = id
			return nil
		}
		if err := set(&s.BOS, tc.BOS, "bos_token"); err != nil {
			return s, err
		}
		if err := set(&s.EOS, tc.EOS, "eos_token"); err != nil {
			return s, err
		}
		if err := set(&s.PAD, tc.PAD, "pad_token"); err != nil {
			return s, err
		}
	}
	var gc struct {
		BOS idList `json:"bos_token_id"`
		EOS idList `json:"eos_token_id"`
		PAD idList `json:"pad_token_id"`
	}
	eos := []int32{}
	if s.EOS >= 0 {
		eos = append(eos, s.EOS)
	}
	path = filepath.Join(dir, "generation_config.json")
	if ok, err := readJSONIfExists(path, &gc); err != nil {
		return s, err
	} else if ok {
		if len(gc.BOS) > 0 {
			s.BOS = gc.BOS[0]
		}
		if len(gc.PAD) > 0 {
			s.PAD = gc.PAD[0]
		}
		if len(gc.EOS) > 0 {
			s.EOS = gc.EOS[0]
			cfgEOS := eos
			eos = append([]int32{}, gc.EOS...)
			for _, id := range cfgEOS {
				if !contains(eos, id) {
					eos = append(eos, id)
				}
			}
		}
	}
	s.EOSIDs = eos
	return s, nil
}

func contains(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func readJSONIfExists(path string, v any) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("parse %s: %w", path, err)
	}
	return true, nil
}

func (s SpecialTokens) clone() SpecialTokens {
	s.EOSIDs = append([]int32(nil), s.EOSIDs...)
	s.Added = append([]AddedToken(nil), s.Added...)
	return s
}

// LoadDir loads dir/tokenizer.json (or tokenizer.json.gz) and reads the
// special tokens with LoadSpecialFromConfig: what an actor needs from a model
// folder.
func LoadDir(dir string) (*Tokenizer, SpecialTokens, error) {
	path := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, errGz := os.Stat(path + ".gz"); errGz == nil {
			path += ".gz"
		}
	}
	tok, err := Load(path)
	if err != nil {
		return nil, SpecialTokens{}, err
	}
	sp, err := LoadSpecialFromConfig(dir, tok)
	if err != nil {
		return nil, SpecialTokens{}, err
	}
	return tok, sp, nil
}
