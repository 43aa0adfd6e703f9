package llama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// RopeType names a RoPE variant as config.json's rope_scaling.rope_type (or
// the legacy key "type") does.
type RopeType string

// The RoPE variants this package builds, as transformers'
// modeling_rope_utils.py ROPE_INIT_FUNCTIONS names them.
const (
	RopeDefault RopeType = "default" // plain RoPE: 1 / theta^(2i/D)
	RopeLinear  RopeType = "linear"  // inverse frequencies divided by factor
	RopeDynamic RopeType = "dynamic" // NTK-aware: theta grows with the sequence length
	RopeYarn    RopeType = "yarn"    // YaRN: ramp between interpolation and extrapolation, scaled cos/sin
	RopeLlama3  RopeType = "llama3"  // Llama 3.1: smooth per-wavelength interpolation
)

// ropeTypes lists the supported rope types.
var ropeTypes = []RopeType{RopeDefault, RopeDynamic, RopeLinear, RopeLlama3, RopeYarn}

// RopeTypes returns the supported rope_type values, sorted.
func RopeTypes() []string {
	out := make([]string, len(ropeTypes))
	for i, t := range ropeTypes {
		out[i] = string(t)
	}
	sort.Strings(out)
	return out
}

// RopeScaling is config.json's rope_scaling, parsed and checked. The zero
// value (Type "") means plain RoPE, as an absent or null rope_scaling does.
type RopeScaling struct {
	Type RopeType
	// Factor is the context extension factor (linear, dynamic, yarn,
	// llama3); >= 1.
	Factor float64
	// LowFreqFactor and HighFreqFactor bound llama3's interpolated band:
	// wavelengths above original/low are divided by Factor, below
	// original/high kept.
	LowFreqFactor, HighFreqFactor float64
	// OriginalMaxPositionEmbeddings is the pre-training context: required
	// for llama3; for yarn it defaults to max_position_embeddings.
	OriginalMaxPositionEmbeddings int
	// Yarn only. AttentionFactor scales cos and sin (nil: from Factor and
	// Mscale/MscaleAllDim as transformers derives it); BetaFast and
	// BetaSlow bound the ramp (0: 32 and 1); Truncate floors/ceils the
	// ramp ends (nil: true).
	AttentionFactor      *float64
	BetaFast, BetaSlow   float64
	Mscale, MscaleAllDim float64
	Truncate             *bool
}

// Kind returns the rope type, RopeDefault for the zero value.
func (r RopeScaling) Kind() RopeType {
	if r.Type == "" {
		return RopeDefault
	}
	return r.Type
}

// ropeKeys lists, per type, the rope_scaling keys it requires and the ones
// it reads when present (transformers' _validate_*_parameters).
var ropeKeys = map[RopeType]struct{ required, optional []string }{
	RopeDefault: {},
	RopeLinear:  {required: []string{"factor"}},
	RopeDynamic: {required: []string{"factor"}, optional: []string{"original_max_position_embeddings"}},
	RopeYarn: {required: []string{"factor"}, optional: []string{"original_max_position_embeddings", "attention_factor",
		"beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"}},
	RopeLlama3: {required: []string{"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}},
}

// ParseRopeScaling decodes a rope_scaling value (an object, null or absent).
// The type comes from "rope_type", or the legacy "type" when that is absent
// (as transformers reads it), and defaults to "default". An unknown type, a
// missing required key or a value of the wrong kind is an error naming the
// key; keys the type does not read are ignored (transformers warns).
func ParseRopeScaling(raw json.RawMessage) (RopeScaling, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return RopeScaling{}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return RopeScaling{}, fmt.Errorf("config: rope_scaling must be an object or null: %w", err)
	}
	typeKey := "rope_type"
	if _, ok := m[typeKey]; !ok {
		typeKey = "type"
	}
	rs := RopeScaling{Type: RopeDefault}
	if v, ok := m[typeKey]; ok {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return RopeScaling{}, fmt.Errorf("config: rope_scaling.%s must be a string, got %s", typeKey, v)
		}
		rs.Type = RopeType(s)
	}
	keys, ok := ropeKeys[rs.Type]
	if !ok {
		return RopeScaling{}, fmt.Errorf("config: rope_scaling.%s %q is not supported (want one of %s)", typeKey, rs.Type, strings.Join(RopeTypes(), ", "))
	}
	for _, k := range keys.required {
		if v, ok := m[k]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return RopeScaling{}, fmt.Errorf("config: rope_scaling with rope_type %q needs key %s", rs.Type, k)
		}
	}
	num := func(k string, dst *float64) error {
		v, ok := m[k]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("config: rope_scaling.%s must be a number, got %s", k, v)
		}
		return nil
	}
	var orig, attn float64
	var err error
	for k, dst := range map[string]*float64{"factor": &rs.Factor, "low_freq_factor": &rs.LowFreqFactor,
		"high_freq_factor": &rs.HighFreqFactor, "original_max_position_embeddings": &orig,
		"beta_fast": &rs.BetaFast, "beta_slow": &rs.BetaSlow, "mscale": &rs.Mscale, "mscale_all_dim": &rs.MscaleAllDim} {
		if err = num(k, dst); err != nil {
			return RopeScaling{}, err
		}
	}
	if orig != math.Trunc(orig) || orig < 0 {
		return RopeScaling{}, fmt.Errorf("config: rope_scaling.original_max_position_embeddings must be a positive integer, got %v", orig)
	}
	rs.OriginalMaxPositionEmbeddings = int(orig)
	if rs.Type == RopeYarn {
		if v, ok := m["attention_factor"]; ok && string(bytes.TrimSpace(v)) != "null" {
			if err := num("attention_factor", &attn); err != nil {
				return RopeScaling{}, err
			}
			if attn <= 0 {
				return RopeScaling{}, fmt.Errorf("config: rope_scaling.attention_factor must be positive, got %v", attn)
			}
			rs.AttentionFactor = &attn
		}
		if v, ok := m["truncate"]; ok && string(bytes.TrimSpace(v)) != "null" {
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				return RopeScaling{}, fmt.Errorf("config: rope_scaling.truncate must be a boolean, got %s", v)
			}
			rs.Truncate = &b
		}
	}
	if rs.Type != RopeDefault && rs.Factor < 1 {
		return RopeScaling{}, fmt.Errorf("config: rope_scaling.factor must be >= 1, got %v", rs.Factor)
	}
	if rs.Type == RopeLlama3 {
		if rs.HighFreqFactor <= rs.LowFreqFactor || rs.LowFreqFactor <= 0 {
			return RopeScaling{}, fmt.Errorf("config: rope_scaling.high_freq_factor %v must exceed low_freq_factor %v > 0", rs.HighFreqFactor, rs.LowFreqFactor)
		}
		if rs.OriginalMaxPositionEmbeddings <= 0 {
			return RopeScaling{}, fmt.Errorf("config: rope_scaling.original_max_position_embeddings must be positive")
		}
	}
	if rs.Type == RopeYarn && (rs.BetaFastOr32() < rs.BetaSlowOr1()) {
		return RopeScaling{}, fmt.Errorf("config: rope_scaling.beta_fast %v must be >= beta_slow %v", rs.BetaFastOr32(), rs.BetaSlowOr1())
	}
	return rs, nil
}

// BetaFastOr32 returns yarn's beta_fast, 32 when unset (transformers' `or 32`).
func (r RopeScaling) BetaFastOr32() float64 {
	if r.BetaFast == 0 {
		return 32
	}
	return r.BetaFast
}

// BetaSlowOr1 returns yarn's beta_slow, 1 when unset.
func (r RopeScaling) BetaSlowOr1() float64 {
	if r.BetaSlow == 0 {
		return 1
	}
	return r.BetaSlow
}

// Rope parses c.RopeScaling (see ParseRopeScaling).
func (c Config) Rope() (RopeScaling, error) { return ParseRopeScaling(c.RopeScaling) }

// RoPE returns the rotary embedding's head_dim/2 inverse frequencies and the
// attention scaling that multiplies cos and sin, exactly as transformers'
// modeling_rope_utils.py computes them for cfg's rope_scaling (values are
// float32 results, as transformers computes them in float32, widened).
//
// seqLen matters only for "dynamic": it is the length transformers' dynamic
// update passes, max(position_ids)+1, and below max_position_embeddings the
// result is plain RoPE. Because dynamic frequencies depend on the length,
// keys cached at an earlier step were rotated with other frequencies than a
// full forward over the same tokens would use: once a sequence grows past
// max_position_embeddings, KV-cached decoding and a full forward disagree
// (in transformers too, whose cache keeps the keys as rotated).
//
// An invalid rope_scaling gives nil and 0; Validate reports it.
func RoPE(cfg Config, seqLen int) (invFreq []float64, attentionScaling float64) {
	rs, err := cfg.Rope()
	if err != nil {
		return nil, 0
	}
	d := cfg.HeadDimension()
	base := cfg.Theta()
	// inv(b)[i] = 1 / b^(2i/d) in float32, as torch computes
	// 1.0 / (base ** (arange(0, dim, 2).float() / dim)).
	inv := func(b float64) []float32 {
		out := make([]float32, d/2)
		for i := range out {
			exp := float32(2*i) / float32(d)
			out[i] = 1 / float32(math.Pow(b, float64(exp)))
		}
		return out
	}
	widen := func(x []float32) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = float64(v)
		}
		return out
	}
	switch rs.Kind() {
	case RopeLinear:
		f := inv(base)
		for i := range f {
			f[i] /= float32(rs.Factor)
		}
		return widen(f), 1
	case RopeDynamic:
		return widen(inv(DynamicBase(cfg, rs, seqLen))), 1
	case RopeLlama3:
		return widen(llama3InvFreq(inv(base), rs)), 1
	case RopeYarn:
		f, a := yarnInvFreq(cfg, rs)
		return widen(f), a
	}
	return widen(inv(base)), 1
}

// DynamicBase returns dynamic NTK's theta for a sequence of seqLen
// (max position id + 1): theta * (factor*L/max - (factor-1))^(d/(d-2)) with
// L = max(seqLen, max_position_embeddings) (transformers'
// _compute_dynamic_ntk_parameters).
func DynamicBase(cfg Config, rs RopeScaling, seqLen int) float64 {
	maxPos := float64(cfg.MaxPositionEmbeddings)
	l := max(float64(seqLen), maxPos)
	d := float64(cfg.HeadDimension())
	return cfg.Theta() * math.Pow(rs.Factor*l/maxPos-(rs.Factor-1), d/(d-2))
}

// llama3InvFreq applies Llama 3.1's scaling to plain inverse frequencies
// (transformers' _compute_llama3_parameters, in float32).
func llama3InvFreq(f []float32, rs RopeScaling) []float32 {
	factor := float32(rs.Factor)
	low, high := float32(rs.LowFreqFactor), float32(rs.HighFreqFactor)
	old := float32(rs.OriginalMaxPositionEmbeddings)
	lowWavelen, highWavelen := old/low, old/high
	out := make([]float32, len(f))
	for i, v := range f {
		wavelen := float32(2*math.Pi) / v
		scaled := v
		if wavelen > lowWavelen {
			scaled = v / factor
		}
		if !(wavelen < highWavelen) && !(wavelen > lowWavelen) {
			smooth := (old/wavelen - low) / (high - low)
			scaled = (1-smooth)*scaled/factor + smooth*scaled
		}
		out[i] = scaled
	}
	return out
}

// YarnAttentionFactor returns the factor yarn multiplies cos and sin by:
// attention_factor when set, else get_mscale(factor, mscale) /
// get_mscale(factor, mscale_all_dim) when both are set, else
// 0.1*ln(factor)+1 (1 for factor <= 1).
func YarnAttentionFactor(rs RopeScaling) float64 {
	if rs.AttentionFactor != nil {
		return *rs.AttentionFactor
	}
	mscale := func(scale, m float64) float64 {
		if scale <= 1 {
			return 1
		}
		return 0.1*m*math.Log(scale) + 1
	}
	if rs.Mscale != 0 && rs.MscaleAllDim != 0 {
		return mscale(rs.Factor, rs.Mscale) / mscale(rs.Factor, rs.MscaleAllDim)
	}
	return mscale(rs.Factor, 1)
}

// yarnInvFreq is transformers' _compute_yarn_parameters (the form where
// factor is taken as written and original_max_position_embeddings, default
// max_position_embeddings, bounds the ramp).
func yarnInvFreq(cfg Config, rs RopeScaling) ([]float32, float64) {
	d := cfg.HeadDimension()
	base := cfg.Theta()
	orig := float64(rs.OriginalMaxPositionEmbeddings)
	if orig == 0 {
		orig = float64(cfg.MaxPositionEmbeddings)
	}
	correctionDim := func(rot float64) float64 {
		return float64(d) * math.Log(orig/(rot*2*math.Pi)) / (2 * math.Log(base))
	}
	low, high := correctionDim(rs.BetaFastOr32()), correctionDim(rs.BetaSlowOr1())
	if rs.Truncate == nil || *rs.Truncate {
		low, high = math.Floor(low), math.Ceil(high)
	}
	low, high = max(low, 0), min(high, float64(d-1))
	if low == high {
		high += 0.001 // transformers: prevent singularity
	}
	factor := float32(rs.Factor)
	out := make([]float32, d/2)
	for i := range out {
		posFreq := float32(math.Pow(base, float64(float32(2*i)/float32(d))))
		extrap := 1 / posFreq
		interp := 1 / (factor * posFreq)
		ramp := (float32(i) - float32(low)) / (float32(high) - float32(low))
		ramp = min(max(ramp, 0), 1)
		extrapFactor := 1 - ramp
		out[i] = interp*(1-extrapFactor) + extrap*extrapFactor
	}
	return out, YarnAttentionFactor(rs)
}
