package train

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// ropeTables are the rotary cos and sin of positions 0..n-1, [n, HeadDim/2]
// row-major, with the attention scaling already multiplied in.
type ropeTables struct {
	cos, sin []float32
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

// ropeType is rope_scaling's rope_type (or its legacy key type); "default"
// without scaling.
func (c Config) ropeType() string {
	if !c.ropeScaled() {
		return "default"
	}
	var rs struct {
		RopeType string `json:"rope_type"`
		Type     string `json:"type"`
	}
	if err := json.Unmarshal([]byte(c.RopeScaling), &rs); err != nil {
		return ""
	}
	if rs.RopeType != "" {
		return rs.RopeType
	}
	return rs.Type
}

// ropeFreqs returns the inverse frequencies [HeadDim/2] and the attention
// scaling for a sequence of seqLen tokens.
func (c Config) ropeFreqs(seqLen int) ([]float64, float64, error) {
	hd := c.HeadDimension()
	if !c.ropeScaled() {
		inv := make([]float64, hd/2)
		for i := range inv {
			inv[i] = 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(hd))
		}
		return inv, 1, nil
	}
	return nil, 0, fmt.Errorf("train: rope_scaling %s is not supported yet", c.RopeScaling)
}

// ropeTables fills the rotary tables of seqLen positions the way
// transformers does: inv_freq in float32, angle = position·inv_freq in
// float32, cos and sin of it multiplied by the attention scaling in float32
// (LlamaRotaryEmbedding.forward).
func (c Config) ropeTables(seqLen int) (ropeTables, error) {
	inv, scale, err := c.ropeFreqs(seqLen)
	if err != nil {
		return ropeTables{}, err
	}
	half := c.HeadDimension() / 2
	if len(inv) != half {
		return ropeTables{}, fmt.Errorf("train: rope gives %d inverse frequencies for head dim %d", len(inv), c.HeadDimension())
	}
	s := float32(scale)
	rt := ropeTables{cos: make([]float32, seqLen*half), sin: make([]float32, seqLen*half)}
	for i := range half {
		f := float32(inv[i])
		for p := range seqLen {
			a := float64(float32(p) * f)
			rt.cos[p*half+i] = float32(math.Cos(a)) * s
			rt.sin[p*half+i] = float32(math.Sin(a)) * s
		}
	}
	return rt, nil
}

// tablesFor returns the rotary tables for a sequence of seqLen tokens. For
// rope type "dynamic" a sequence longer than ropeMaxPos gets tables of its
// own, computed from its length as transformers' dynamic_rope_update does in
// a teacher-forced forward of that sequence alone; every other sequence
// shares the model's tables.
func (m *Model) tablesFor(seqLen int) (ropeTables, error) {
	c := m.Config
	if seqLen <= c.ropeMaxPos() || c.ropeType() != "dynamic" {
		return m.ropeTab, nil
	}
	if rt, ok := m.dynRope[seqLen]; ok {
		return rt, nil
	}
	rt, err := c.ropeTables(seqLen)
	if err != nil {
		return ropeTables{}, err
	}
	if m.dynRope == nil {
		m.dynRope = map[int]ropeTables{}
	}
	m.dynRope[seqLen] = rt
	return rt, nil
}
