package train

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/toolrl/toolrl/model/llama"
)

// ropeTables are the rotary cos and sin of positions 0..n-1, [n, HeadDim/2]
// row-major, with the attention scaling already multiplied in.
type ropeTables[F Float] struct {
	cos, sin []F
}

// ropeScaled reports whether the config has a rope_scaling object.
func (c Config) ropeScaled() bool {
	s := strings.TrimSpace(c.RopeScaling)
	return s != "" && s != "null"
}

// ropeMaxPos is the max_position_embeddings the rope formulas see.
func (c Config) ropeMaxPos() int {
	if c.RopeMaxPos != 0 {
		return c.RopeMaxPos
	}
	return c.MaxPos
}

// ropeConfig is the part of config.json that model/llama's RoPE reads.
func (c Config) ropeConfig() llama.Config {
	hf := llama.Config{
		ModelType: c.modelType(), HiddenSize: c.Dim, NumAttentionHeads: c.Heads, HeadDim: c.HeadDimension(),
		RopeTheta: c.RopeTheta, MaxPositionEmbeddings: c.ropeMaxPos(),
	}
	if c.ropeScaled() {
		hf.RopeScaling = json.RawMessage(c.RopeScaling)
	}
	return hf
}

// ropeDynamic reports rope type "dynamic", whose frequencies depend on the
// sequence length.
func (c Config) ropeDynamic() bool {
	rs, err := c.ropeConfig().Rope()
	return err == nil && rs.Kind() == llama.RopeDynamic
}

// ropeFreqs returns the inverse frequencies [HeadDim/2] and the attention
// scaling for a sequence of seqLen tokens, from model/llama's RoPE (the
// builder's graph and reference use the same function), or an error naming
// the rope_scaling key it cannot read.
func (c Config) ropeFreqs(seqLen int) ([]float64, float64, error) {
	cfg := c.ropeConfig()
	if _, err := cfg.Rope(); err != nil {
		return nil, 0, fmt.Errorf("train: %w", err)
	}
	inv, scale := llama.RoPE(cfg, seqLen)
	return inv, scale, nil
}

// makeRopeTables fills the rotary tables of positions 0..positions-1, with
// the frequencies of a freqLen-token sequence, the way transformers does:
// inv_freq in float32, angle = position·inv_freq in float32, cos and sin of
// it in the model's dtype F, multiplied by the attention scaling in F
// (LlamaRotaryEmbedding.forward).
func makeRopeTables[F Float](c Config, positions, freqLen int) (ropeTables[F], error) {
	seqLen := positions
	inv, scale, err := c.ropeFreqs(freqLen)
	if err != nil {
		return ropeTables[F]{}, err
	}
	half := c.HeadDimension() / 2
	if len(inv) != half {
		return ropeTables[F]{}, fmt.Errorf("train: rope gives %d inverse frequencies for head dim %d", len(inv), c.HeadDimension())
	}
	s := F(scale)
	rt := ropeTables[F]{cos: make([]F, seqLen*half), sin: make([]F, seqLen*half)}
	for i := range half {
		f := float32(inv[i])
		for p := range seqLen {
			a := float64(float32(p) * f)
			rt.cos[p*half+i] = F(math.Cos(a)) * s
			rt.sin[p*half+i] = F(math.Sin(a)) * s
		}
	}
	return rt, nil
}

// tablesFor returns the rotary tables for a sequence of seqLen tokens. For
// rope type "dynamic" a sequence longer than max_position_embeddings
// (ropeMaxPos) gets tables of its own, computed from its length as
// transformers' dynamic_rope_update does in a teacher-forced forward of that
// sequence alone (seq_len = max(position_ids)+1); every other sequence shares
// the model's tables, which are plain RoPE for "dynamic". The actor's
// KV-cached decode keeps keys rotated with the frequencies of the length at
// which they were computed, so past max_position_embeddings the two would
// disagree; the learner's LoadModel sets MaxPos to max_position_embeddings,
// as the actor caps sequences there, so neither reaches that regime.
func (m *ModelOf[F]) tablesFor(seqLen int) (ropeTables[F], error) {
	c := m.Config
	if seqLen <= c.ropeMaxPos() || !c.ropeDynamic() {
		return m.ropeTab, nil
	}
	if rt, ok := m.dynRope[seqLen]; ok {
		return rt, nil
	}
	rt, err := makeRopeTables[F](c, seqLen, seqLen)
	if err != nil {
		return ropeTables[F]{}, err
	}
	if m.dynRope == nil {
		m.dynRope = map[int]ropeTables[F]{}
	}
	m.dynRope[seqLen] = rt
	return rt, nil
}
