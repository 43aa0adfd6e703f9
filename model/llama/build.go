package llama

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolrl/toolrl/internal/bytesize"
	"github.com/toolrl/toolrl/model/safetensors"
)

// BuildFolderOptions says where a model folder's weights and tokenizer come from
// and how the folder is written, for BuildFolder (toolrl model build). Exactly one
// of FromSafetensors and Shape is set.
type BuildFolderOptions struct {
	// FromSafetensors is a Hugging Face checkpoint folder: config.json and
	// model.safetensors or a sharded index. Its generation_config.json,
	// special_tokens_map.json, prompt_format.json and tools.yaml are carried
	// into the built folder when present (a quantized copy of a toolrl
	// policy needs the last two as the original does).
	FromSafetensors string
	// Shape names the architecture of seeded random weights (ShapeNames),
	// drawn with Seed.
	Shape string
	Seed  uint64
	// Tokenizer is a tokenizer.json file to ship (a tokenizer_config.json
	// beside it is shipped too); empty means the checkpoint's own, else
	// ByteTokenizerJSON.
	Tokenizer string
	// Folder is how the folder is written: its ONNX options (whose Progress
	// also sees the checkpoint being read) and its safetensors copy. BuildFolder
	// fills in its config, weights and file contents.
	Folder FolderSpec
	// Note, when set, receives a sentence a person should read about a
	// choice the build made for them: a vocabulary grown to the tokenizer's,
	// or the default tokenizer shipped for want of one.
	Note func(string)
}

// BuiltFolder is what BuildFolder wrote.
type BuiltFolder struct {
	*Folder
	// Config is the built model's config.json.
	Config Config
	// Source says where the weights came from, for a person: the checkpoint
	// folder with its dtypes, shard count and size, or "random (shape S,
	// seed N)".
	Source string
	// Sizes holds the size in bytes of each of Folder.Files, in order.
	Sizes []int64
}

// Bytes is the total size of the files written.
func (b *BuiltFolder) Bytes() int64 {
	var n int64
	for _, s := range b.Sizes {
		n += s
	}
	return n
}

// BuildFolder writes a complete model folder into dir from a checkpoint or from
// random weights (see BuildFolderOptions), replacing dir only when it is a model
// folder (ReplaceFolder).
func BuildFolder(dir string, o BuildFolderOptions) (*BuiltFolder, error) {
	note := o.Note
	if note == nil {
		note = func(string) {}
	}
	spec := o.Folder
	// The tokenizer: o.Tokenizer, else the checkpoint's, else the default.
	tokPath := o.Tokenizer
	if tokPath == "" && o.FromSafetensors != "" {
		if p := filepath.Join(o.FromSafetensors, "tokenizer.json"); isFile(p) {
			tokPath = p
		}
	}
	if tokPath != "" {
		b, err := os.ReadFile(tokPath)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		spec.TokenizerJSON = b
		if spec.TokenizerConfig, err = readOptional(filepath.Join(filepath.Dir(tokPath), "tokenizer_config.json")); err != nil {
			return nil, err
		}
	}

	var source string
	if o.FromSafetensors == "" {
		cfg, err := ShapeConfig(o.Shape)
		if err != nil {
			return nil, err
		}
		if spec.TokenizerJSON != nil {
			bos, eos, pad, size, err := TokenizerSpecials(spec.TokenizerJSON, spec.TokenizerConfig)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", tokPath, err)
			}
			cfg.BOSTokenID, cfg.EOSTokenID, cfg.PadTokenID = bos, eos, pad
			if size > cfg.VocabSize {
				grown := (size + 63) / 64 * 64
				note(fmt.Sprintf("tokenizer has %d tokens; vocab_size %d -> %d", size, cfg.VocabSize, grown))
				cfg.VocabSize = grown
			}
		}
		w, err := RandomWeights(cfg, o.Seed)
		if err != nil {
			return nil, err
		}
		spec.Config, spec.Weights = cfg, w
		source = fmt.Sprintf("random (shape %s, seed %d)", o.Shape, o.Seed)
	} else {
		cfg, err := LoadConfig(o.FromSafetensors)
		if err != nil {
			return nil, err
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(o.FromSafetensors, "config.json"), err)
		}
		if source, err = DescribeCheckpoint(o.FromSafetensors); err != nil {
			return nil, err
		}
		w, err := LoadSafetensorsProgress(o.FromSafetensors, cfg, o.Folder.ONNX.Progress)
		if err != nil {
			return nil, err
		}
		if o.Folder.ONNX.Fused {
			if err := FusedSupported(cfg); err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(o.FromSafetensors, "config.json"), err)
			}
		}
		spec.Config, spec.Weights = cfg, w
		if spec.TokenizerJSON == nil {
			note(fmt.Sprintf("no tokenizer.json in %s and no --tokenizer: shipping the default byte-level tokenizer", o.FromSafetensors))
		}
		spec.ExtraFiles = map[string][]byte{}
		// prompt_format.json and tools.yaml make a toolrl policy folder: a
		// quantized copy for actors needs them as the original does.
		for _, name := range []string{"generation_config.json", "special_tokens_map.json", "prompt_format.json", "tools.yaml"} {
			b, err := readOptional(filepath.Join(o.FromSafetensors, name))
			if err != nil {
				return nil, err
			}
			if b == nil {
				continue
			}
			if name == "generation_config.json" {
				spec.GenerationConfig = b
			} else {
				spec.ExtraFiles[name] = b
			}
		}
	}

	folder, err := ReplaceFolder(dir, spec)
	if err != nil {
		return nil, err
	}
	built := &BuiltFolder{Folder: folder, Config: spec.Config, Source: source}
	for _, name := range folder.Files {
		st, err := os.Stat(filepath.Join(folder.Dir, name))
		if err != nil {
			return nil, err
		}
		built.Sizes = append(built.Sizes, st.Size())
	}
	return built, nil
}

// Precision names the arithmetic of the graph o writes, for a person:
// "float32", the quantization (Quantization.String) or float16's mixed
// precision.
func (o ONNXOptions) Precision() string {
	if o.Fused {
		o.Fused = false
		return o.Precision() + ", fused graph (GroupQueryAttention, SkipSimplifiedLayerNormalization)"
	}
	switch {
	case o.Quantize.Enabled():
		return o.Quantize.String()
	case o.Float16:
		return "float16 (norms, softmax, RoPE in float32; float32 logits)"
	}
	return "float32"
}

// DescribeCheckpoint says what the safetensors checkpoint in dir holds, for
// a person: "DIR: BF16+F32, 3 shards, 1.2 GiB" (dtypes, files, tensor
// bytes).
func DescribeCheckpoint(dir string) (string, error) {
	ck, err := safetensors.OpenDir(dir)
	if err != nil {
		return "", err
	}
	defer ck.Close()
	dtypes := map[safetensors.DType]int64{}
	files := map[string]bool{}
	var total int64
	for _, n := range ck.Names() {
		info, _ := ck.Info(n)
		dtypes[info.DType] += info.End - info.Begin
		files[ck.File(n)] = true
		total += info.End - info.Begin
	}
	var kinds []string
	for dt := range dtypes {
		kinds = append(kinds, string(dt))
	}
	sort.Strings(kinds)
	shards := fmt.Sprintf("%d shards", len(files))
	if len(files) == 1 {
		shards = "1 file"
	}
	return fmt.Sprintf("%s: %s, %s, %s", dir, strings.Join(kinds, "+"), shards, bytesize.Format(total)), nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// readOptional reads a file that may be absent (nil, nil).
func readOptional(p string) ([]byte, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
