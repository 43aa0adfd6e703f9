package llama

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/toolrl/toolrl/model/safetensors"
)

// FolderSpec describes a Hugging Face model folder for WriteFolder.
type FolderSpec struct {
	Config  Config
	Weights Weights
	// TokenizerJSON is tokenizer.json's content; nil means the default
	// byte-level tokenizer (ByteTokenizerJSON).
	TokenizerJSON []byte
	// TokenizerConfig is tokenizer_config.json's content; nil means one
	// derived from the tokenizer and Config's bos/eos/pad ids, with
	// ChatTemplate.
	TokenizerConfig []byte
	// ChatTemplate is used when TokenizerConfig is nil; "" means
	// DefaultChatTemplate (ChatML).
	ChatTemplate string
	// GenerationConfig is generation_config.json's content; nil means one
	// with Config's bos/eos/pad ids.
	GenerationConfig []byte
	// ExtraFiles are copied verbatim into the folder (name -> content), e.g.
	// special_tokens_map.json from a source checkpoint.
	ExtraFiles map[string][]byte
	ONNX       ONNXOptions
	// Safetensors also writes model.safetensors (in SafetensorsDType, F32
	// when empty), so the folder is a PyTorch checkpoint as well.
	Safetensors      bool
	SafetensorsDType safetensors.DType
	// SafetensorsShardBytes, when > 0, shards the safetensors weights as
	// save_pretrained's max_shard_size does: model-0000i-of-0000n.safetensors
	// of at most this many bytes each (a tensor is never split) and
	// model.safetensors.index.json.
	SafetensorsShardBytes int64
}

// Folder lists what WriteFolder wrote.
type Folder struct {
	Dir   string
	Files []string // paths relative to Dir, sorted
	// ExternalData reports whether onnx/model.onnx keeps its weights in
	// onnx/model.onnx_data.
	ExternalData bool
}

// ModelFile is the ONNX model's path inside a folder.
const ModelFile = "onnx/model.onnx"

// WriteFolder writes a complete Hugging Face model folder into dir:
// config.json, generation_config.json, tokenizer.json,
// tokenizer_config.json, onnx/model.onnx (+ onnx/model.onnx_data when the
// weights need external data) and, when asked, model.safetensors (always the
// full-precision weights, also when spec.ONNX.Quantize quantizes the ONNX
// graph; config.json then records the quantization under QuantizationKey).
// transformers.js and optimum load the result as they load their own exports.
func WriteFolder(dir string, spec FolderSpec) (*Folder, error) {
	cfg := spec.Config
	if err := spec.Weights.Check(cfg); err != nil {
		return nil, err
	}
	tok := spec.TokenizerJSON
	if tok == nil {
		tok = ByteTokenizerJSON()
	}
	vocab, added, err := tokenizerVocab(tok)
	if err != nil {
		return nil, err
	}
	for id := range vocab {
		if id >= cfg.VocabSize || id < 0 {
			return nil, fmt.Errorf("folder: tokenizer id %d (%q) is outside the model's vocab_size %d", id, vocab[id], cfg.VocabSize)
		}
	}
	for _, f := range []struct {
		name string
		ids  TokenIDs
	}{{"bos_token_id", cfg.BOSTokenID}, {"eos_token_id", cfg.EOSTokenID}, {"pad_token_id", cfg.PadTokenID}} {
		for _, id := range f.ids {
			if _, ok := vocab[id]; !ok {
				return nil, fmt.Errorf("folder: config %s %d is not a token of the tokenizer", f.name, id)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "onnx"), 0o755); err != nil {
		return nil, fmt.Errorf("folder: %w", err)
	}
	out := &Folder{Dir: dir}
	put := func(name string, b []byte) error {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("folder: %w", err)
		}
		out.Files = append(out.Files, name)
		return nil
	}

	out.ExternalData, err = WriteONNX(filepath.Join(dir, ModelFile), cfg, spec.Weights, spec.ONNX)
	if err != nil {
		return nil, err
	}
	out.Files = append(out.Files, ModelFile)
	dataName := spec.ONNX.DataFile
	if dataName == "" {
		dataName = "model.onnx_data"
	}
	if !out.ExternalData {
		// A data file left by an earlier build into the same folder would
		// be stale; remove it so the folder says what the model uses.
		if err := os.Remove(filepath.Join(dir, "onnx", dataName)); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("folder: %w", err)
		}
	}
	if out.ExternalData {
		out.Files = append(out.Files, "onnx/"+dataName)
	}
	// transformers.js looks for the data file only when its config says so;
	// keep any other transformers.js settings a source config carried.
	if err := setExternalDataFlag(&cfg, out.ExternalData); err != nil {
		return nil, err
	}
	// The quantization is recorded so that actors can name it in the
	// trajectories they write (setExternalDataFlag gave cfg its own map).
	if spec.ONNX.Quantize.Enabled() {
		raw, err := quantizationJSON(spec.ONNX.Quantize)
		if err != nil {
			return nil, err
		}
		cfg.Extra[QuantizationKey] = raw
	} else {
		delete(cfg.Extra, QuantizationKey)
	}
	if spec.Safetensors {
		dt := spec.SafetensorsDType
		if dt == "" {
			dt = safetensors.F32
		}
		cfg.TorchDType = map[safetensors.DType]string{safetensors.F32: "float32", safetensors.F16: "float16", safetensors.BF16: "bfloat16"}[dt]
		files, err := safetensors.WriteDir(dir, spec.Weights.SafetensorsTensors(cfg), dt, spec.SafetensorsShardBytes,
			map[string]string{"format": "pt"})
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			out.Files = append(out.Files, filepath.Base(f))
		}
	}
	if cfg.TorchDType == "" {
		cfg.TorchDType = "float32"
	}
	cfg.UseCache = true
	cb, err := MarshalConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := put("config.json", cb); err != nil {
		return nil, err
	}
	gen := spec.GenerationConfig
	if gen == nil {
		gen, err = indentJSON(map[string]any{
			"_from_model_config": true,
			"bos_token_id":       cfg.BOSTokenID,
			"eos_token_id":       cfg.EOSTokenID,
			"pad_token_id":       cfg.PadTokenID,
		})
		if err != nil {
			return nil, err
		}
	}
	if err := put("generation_config.json", gen); err != nil {
		return nil, err
	}
	if err := put("tokenizer.json", tok); err != nil {
		return nil, err
	}
	tc := spec.TokenizerConfig
	if tc == nil {
		if tc, err = tokenizerConfig(cfg, vocab, added, spec.ChatTemplate); err != nil {
			return nil, err
		}
	}
	if err := put("tokenizer_config.json", tc); err != nil {
		return nil, err
	}
	for name, b := range spec.ExtraFiles {
		if err := put(name, b); err != nil {
			return nil, err
		}
	}
	sort.Strings(out.Files)
	return out, nil
}

// ReplaceFolder writes the folder as WriteFolder does, but into a staging
// directory beside dir that is renamed to dir only once every file is
// written: a failed or interrupted build leaves no folder at dir that looks
// complete (only a hidden .NAME.partial-* directory, removed on failure).
// An existing dir is replaced whole when it is empty or a model folder (it
// holds config.json); anything else is refused, so a mistyped --out cannot
// delete a user's directory.
func ReplaceFolder(dir string, spec FolderSpec) (*Folder, error) {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	replace := false
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return nil, fmt.Errorf("folder: %s exists and is not a directory", dir)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("folder: %w", err)
		}
		if len(entries) > 0 {
			if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
				return nil, fmt.Errorf("folder: %s is not empty and holds no config.json; refusing to replace it (give a new or empty directory)", dir)
			}
		}
		replace = true
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("folder: %w", err)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("folder: %w", err)
	}
	stage, err := os.MkdirTemp(parent, "."+base+".partial-")
	if err != nil {
		return nil, fmt.Errorf("folder: %w", err)
	}
	// MkdirTemp makes the directory 0700; a model folder is read by others.
	if err := os.Chmod(stage, 0o755); err != nil {
		os.RemoveAll(stage)
		return nil, fmt.Errorf("folder: %w", err)
	}
	out, err := WriteFolder(stage, spec)
	if err != nil {
		os.RemoveAll(stage)
		return nil, err
	}
	var trash string
	if replace {
		// os.Rename will not replace a directory: move the old one aside
		// first, into a hidden directory removed afterwards.
		if trash, err = os.MkdirTemp(parent, "."+base+".old-"); err != nil {
			os.RemoveAll(stage)
			return nil, fmt.Errorf("folder: %w", err)
		}
		if err := os.Rename(dir, filepath.Join(trash, base)); err != nil {
			os.RemoveAll(stage)
			os.RemoveAll(trash)
			return nil, fmt.Errorf("folder: move the old %s aside: %w", dir, err)
		}
	}
	if err := os.Rename(stage, dir); err != nil {
		os.RemoveAll(stage)
		if trash != "" {
			// Put the old folder back rather than leave nothing.
			if err2 := os.Rename(filepath.Join(trash, base), dir); err2 == nil {
				os.RemoveAll(trash)
			}
		}
		return nil, fmt.Errorf("folder: move the new folder into place at %s: %w", dir, err)
	}
	if trash != "" {
		if err := os.RemoveAll(trash); err != nil {
			return nil, fmt.Errorf("folder: wrote %s but could not remove the old copy %s: %w", dir, trash, err)
		}
	}
	out.Dir = dir
	return out, nil
}

func indentJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("folder: %w", err)
	}
	return append(b, '\n'), nil
}

// tokenizerConfig derives tokenizer_config.json: special token strings from
// the config's ids, the added tokens, and the chat template.
func tokenizerConfig(cfg Config, vocab map[int]string, added []addedToken, chatTemplate string) ([]byte, error) {
	if chatTemplate == "" {
		chatTemplate = DefaultChatTemplate
	}
	tokenOf := func(ids TokenIDs) any {
		if len(ids) == 0 {
			return nil
		}
		return vocab[ids[0]]
	}
	// added_tokens_decoder entries are AddedToken kwargs: no "id" field.
	decoder := map[string]addedTokenKwargs{}
	for _, a := range added {
		decoder[fmt.Sprint(a.ID)] = a.addedTokenKwargs
	}
	maxLen := cfg.MaxPositionEmbeddings
	if maxLen == 0 {
		maxLen = 2048
	}
	return indentJSON(map[string]any{
		"add_bos_token":                false,
		"add_eos_token":                false,
		"added_tokens_decoder":         decoder,
		"bos_token":                    tokenOf(cfg.BOSTokenID),
		"eos_token":                    tokenOf(cfg.EOSTokenID),
		"pad_token":                    tokenOf(cfg.PadTokenID),
		"unk_token":                    nil,
		"chat_template":                chatTemplate,
		"clean_up_tokenization_spaces": false,
		"model_max_length":             maxLen,
		"tokenizer_class":              "PreTrainedTokenizerFast",
	})
}

// ModelFolder is a model folder as a runtime reads it (see OpenFolder).
type ModelFolder struct {
	Dir           string
	Config        Config
	ModelPath     string // onnx/model.onnx
	TokenizerPath string // tokenizer.json
	// EOS are the ids that end generation: generation_config.json's
	// eos_token_id when present, else config.json's.
	EOS TokenIDs
	// Pad is the padding id (generation_config.json, config.json, else the
	// first EOS id).
	Pad int
	// ChatTemplate is tokenizer_config.json's chat_template ("" if none).
	ChatTemplate string
	// Quantization is how onnx/model.onnx's weights are quantized, from
	// config.json's QuantizationKey (the zero value: float32).
	Quantization Quantization
}

// OpenFolder reads the metadata of a model folder written by WriteFolder or
// by optimum (config.json, generation_config.json, tokenizer_config.json) and
// checks that onnx/model.onnx and tokenizer.json exist. It does not load the
// model.
func OpenFolder(dir string) (*ModelFolder, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	quant, err := FolderQuantization(cfg)
	if err != nil {
		return nil, fmt.Errorf("model folder %s: %w", dir, err)
	}
	mf := &ModelFolder{Dir: dir, Config: cfg, ModelPath: filepath.Join(dir, ModelFile), TokenizerPath: filepath.Join(dir, "tokenizer.json"),
		EOS: cfg.EOSTokenID, Pad: cfg.PadTokenID.First(), Quantization: quant}
	for _, p := range []string{mf.ModelPath, mf.TokenizerPath} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("model folder: %w", err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "generation_config.json")); err == nil {
		var gen struct {
			EOS TokenIDs `json:"eos_token_id"`
			Pad TokenIDs `json:"pad_token_id"`
		}
		if err := json.Unmarshal(b, &gen); err != nil {
			return nil, fmt.Errorf("model folder %s: generation_config.json: %w", dir, err)
		}
		if len(gen.EOS) > 0 {
			mf.EOS = gen.EOS
		}
		if len(gen.Pad) > 0 {
			mf.Pad = gen.Pad.First()
		}
	}
	if mf.Pad < 0 {
		mf.Pad = mf.EOS.First()
	}
	if b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		var tc struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(b, &tc); err != nil {
			return nil, fmt.Errorf("model folder %s: tokenizer_config.json: %w", dir, err)
		}
		// chat_template is a string, or a list of named templates.
		var s string
		if json.Unmarshal(tc.ChatTemplate, &s) == nil {
			mf.ChatTemplate = s
		} else {
			var named []struct{ Name, Template string }
			if json.Unmarshal(tc.ChatTemplate, &named) == nil {
				for _, n := range named {
					if n.Name == "default" || mf.ChatTemplate == "" {
						mf.ChatTemplate = n.Template
					}
				}
			}
		}
	}
	return mf, nil
}

// setExternalDataFlag sets or clears transformers.js_config's
// use_external_data_format in cfg.Extra (on a copy of the map).
func setExternalDataFlag(cfg *Config, external bool) error {
	extra := make(map[string]json.RawMessage, len(cfg.Extra)+1)
	for k, v := range cfg.Extra {
		extra[k] = v
	}
	tj := map[string]json.RawMessage{}
	if raw, ok := extra["transformers.js_config"]; ok {
		if err := json.Unmarshal(raw, &tj); err != nil {
			return fmt.Errorf("folder: config transformers.js_config: %w", err)
		}
	}
	if external {
		tj["use_external_data_format"] = json.RawMessage("true")
	} else {
		delete(tj, "use_external_data_format")
	}
	if len(tj) == 0 {
		delete(extra, "transformers.js_config")
	} else {
		b, err := json.Marshal(tj)
		if err != nil {
			return fmt.Errorf("folder: %w", err)
		}
		extra["transformers.js_config"] = b
	}
	cfg.Extra = extra
	return nil
}
