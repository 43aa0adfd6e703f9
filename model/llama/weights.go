package llama

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolrl/toolrl/model/safetensors"
)

// Tensor is a row-major float32 tensor.
type Tensor struct {
	Shape []int
	Data  []float32
}

// Weights maps Hugging Face tensor names to tensors, in PyTorch layout
// (Linear weights are [out, in]):
//
//	model.embed_tokens.weight                    [V, H]
//	model.layers.{i}.input_layernorm.weight      [H]
//	model.layers.{i}.self_attn.q_proj.weight     [nH*D, H]   (+ .bias [nH*D] when QKVBias)
//	model.layers.{i}.self_attn.k_proj.weight     [kvH*D, H]  (+ .bias)
//	model.layers.{i}.self_attn.v_proj.weight     [kvH*D, H]  (+ .bias)
//	model.layers.{i}.self_attn.q_norm.weight     [D]         (when QKNorm: Qwen3)
//	model.layers.{i}.self_attn.k_norm.weight     [D]         (when QKNorm)
//	model.layers.{i}.self_attn.o_proj.weight     [H, nH*D]   (+ .bias [H] when OBias)
//	model.layers.{i}.post_attention_layernorm.weight [H]
//	model.layers.{i}.mlp.gate_proj.weight        [I, H]
//	model.layers.{i}.mlp.up_proj.weight          [I, H]
//	model.layers.{i}.mlp.down_proj.weight        [H, I]
//	model.norm.weight                            [H]
//	lm_head.weight                               [V, H]  (absent when tied)
type Weights map[string]Tensor

// Layer tensor name helpers.
func layerName(i int, suffix string) string { return fmt.Sprintf("model.layers.%d.%s", i, suffix) }

// Names of the non-layer tensors.
const (
	EmbedName  = "model.embed_tokens.weight"
	NormName   = "model.norm.weight"
	LMHeadName = "lm_head.weight"
)

// Spec returns every tensor name the config needs with its shape, in the
// order Hugging Face checkpoints store them.
func (c Config) Spec() ([]string, map[string][]int) {
	H, I, V := c.HiddenSize, c.IntermediateSize, c.VocabSize
	D, nH, kvH := c.HeadDimension(), c.NumAttentionHeads, c.KVHeads()
	shapes := map[string][]int{EmbedName: {V, H}}
	names := []string{EmbedName}
	add := func(n string, s ...int) {
		names = append(names, n)
		shapes[n] = s
	}
	for i := 0; i < c.NumHiddenLayers; i++ {
		add(layerName(i, "input_layernorm.weight"), H)
		add(layerName(i, "self_attn.q_proj.weight"), nH*D, H)
		add(layerName(i, "self_attn.k_proj.weight"), kvH*D, H)
		add(layerName(i, "self_attn.v_proj.weight"), kvH*D, H)
		if c.QKVBias() {
			add(layerName(i, "self_attn.q_proj.bias"), nH*D)
			add(layerName(i, "self_attn.k_proj.bias"), kvH*D)
			add(layerName(i, "self_attn.v_proj.bias"), kvH*D)
		}
		if c.QKNorm() {
			add(layerName(i, "self_attn.q_norm.weight"), D)
			add(layerName(i, "self_attn.k_norm.weight"), D)
		}
		add(layerName(i, "self_attn.o_proj.weight"), H, nH*D)
		if c.OBias() {
			add(layerName(i, "self_attn.o_proj.bias"), H)
		}
		add(layerName(i, "post_attention_layernorm.weight"), H)
		add(layerName(i, "mlp.gate_proj.weight"), I, H)
		add(layerName(i, "mlp.up_proj.weight"), I, H)
		add(layerName(i, "mlp.down_proj.weight"), H, I)
	}
	add(NormName, H)
	if !c.TieWordEmbeddings {
		add(LMHeadName, V, H)
	}
	return names, shapes
}

// NumParams returns the number of parameters the config needs (a tied head
// counted once).
func (c Config) NumParams() int64 {
	names, shapes := c.Spec()
	var n int64
	for _, name := range names {
		p := int64(1)
		for _, d := range shapes[name] {
			p *= int64(d)
		}
		n += p
	}
	return n
}

// Check verifies that w holds exactly the tensors cfg needs, with the right
// shapes and data lengths. It names every problem it finds.
func (w Weights) Check(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	names, shapes := cfg.Spec()
	var errs []string
	for _, n := range names {
		t, ok := w[n]
		if !ok {
			errs = append(errs, fmt.Sprintf("missing %s %v", n, shapes[n]))
			continue
		}
		if !equalShape(t.Shape, shapes[n]) {
			errs = append(errs, fmt.Sprintf("%s has shape %v, want %v", n, t.Shape, shapes[n]))
			continue
		}
		if numel(t.Shape) != len(t.Data) {
			errs = append(errs, fmt.Sprintf("%s has %d values for shape %v", n, len(t.Data), t.Shape))
		}
	}
	var extra []string
	for n := range w {
		if _, ok := shapes[n]; !ok {
			extra = append(extra, n)
		}
	}
	sort.Strings(extra)
	for _, n := range extra {
		errs = append(errs, fmt.Sprintf("unexpected tensor %s (tie_word_embeddings=%v, model_type=%s)", n, cfg.TieWordEmbeddings, cfg.ModelType))
	}
	if len(errs) > 0 {
		if len(errs) > 8 {
			errs = append(errs[:8], fmt.Sprintf("... and %d more", len(errs)-8))
		}
		return errors.New("weights: " + strings.Join(errs, "; "))
	}
	return nil
}

// LMHead returns the output projection [V, H]: lm_head.weight, or the
// embedding when the head is tied.
func (w Weights) LMHead(cfg Config) Tensor {
	if cfg.TieWordEmbeddings {
		return w[EmbedName]
	}
	return w[LMHeadName]
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// LoadSafetensors reads the weights cfg needs from the safetensors checkpoint
// in dir (single file or sharded index; F32, F16 or BF16), converting them to
// float32. Tensors the architecture does not use (rotary_emb.inv_freq) are
// skipped; a tied checkpoint that still stores lm_head.weight is accepted
// and the copy ignored, as transformers ignores it when it ties the weights.
func LoadSafetensors(dir string, cfg Config) (Weights, error) {
	return LoadSafetensorsProgress(dir, cfg, nil)
}

// LoadSafetensorsProgress is LoadSafetensors calling progress (when not nil)
// after each tensor it reads. Every tensor's name, shape and dtype is checked
// before any data is read, so a checkpoint that cannot be converted fails at
// once, naming the file and the tensor. Tensors are converted one at a time
// in bounded chunks: memory holds the float32 weights and one chunk, never
// the checkpoint's bytes as well.
func LoadSafetensorsProgress(dir string, cfg Config, progress func(Progress)) (Weights, error) {
	ck, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	names, shapes := cfg.Spec()
	p := Progress{Step: "read", TotalTensors: len(names)}
	for _, n := range names {
		info, ok := ck.Info(n)
		if !ok {
			return nil, fmt.Errorf("checkpoint %s: missing tensor %s (shape %v)", dir, n, shapes[n])
		}
		switch info.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16:
		default:
			return nil, fmt.Errorf("checkpoint %s: tensor %s in %s is %s; model build reads F32, F16 and BF16 weights (dequantize or convert the checkpoint first)",
				dir, n, ck.File(n), info.DType)
		}
		shape := make([]int, len(info.Shape))
		for i, d := range info.Shape {
			shape[i] = int(d)
		}
		if !equalShape(shape, shapes[n]) {
			return nil, fmt.Errorf("checkpoint %s: tensor %s in %s has shape %v, config.json wants %v", dir, n, filepath.Base(ck.File(n)), shape, shapes[n])
		}
		p.TotalBytes += info.End - info.Begin
	}
	for _, n := range ck.Names() {
		if _, ok := shapes[n]; ok || strings.HasSuffix(n, "rotary_emb.inv_freq") {
			continue
		}
		if n == LMHeadName && cfg.TieWordEmbeddings {
			continue // tied: the embedding is the head
		}
		return nil, fmt.Errorf("checkpoint %s: tensor %s in %s is not part of a %s model with this config.json", dir, n, filepath.Base(ck.File(n)), cfg.ModelType)
	}
	w := make(Weights, len(names))
	for _, n := range names {
		info, _ := ck.Info(n)
		data, err := ck.Float32(n)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
		}
		w[n] = Tensor{Shape: shapes[n], Data: data}
		if progress != nil {
			p.Name = n
			p.Tensors++
			p.Bytes += info.End - info.Begin
			progress(p)
		}
	}
	return w, nil
}

// SafetensorsTensors lists w in checkpoint order for safetensors.Write.
func (w Weights) SafetensorsTensors(cfg Config) []safetensors.Tensor {
	names, _ := cfg.Spec()
	out := make([]safetensors.Tensor, 0, len(names))
	for _, n := range names {
		t := w[n]
		shape := make([]int64, len(t.Shape))
		for i, d := range t.Shape {
			shape[i] = int64(d)
		}
		out = append(out, safetensors.Tensor{Name: n, Shape: shape, Data: t.Data})
	}
	return out
}
