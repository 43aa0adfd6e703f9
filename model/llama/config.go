package llama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Config mirrors the fields of a Hugging Face config.json that the
// architecture and the loaders (transformers, transformers.js, optimum) read.
// Zero values of optional fields mean the transformers defaults; use the
// accessor methods (HeadDimension, KVHeads, ...) rather than the raw fields.
type Config struct {
	ModelType             string   `json:"model_type"` // "llama" (default), "qwen2", "qwen3" or "mistral" (see Family)
	Architectures         []string `json:"architectures,omitempty"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads,omitempty"` // 0: same as NumAttentionHeads
	HeadDim               int      `json:"head_dim,omitempty"`            // 0: HiddenSize / NumAttentionHeads
	HiddenAct             string   `json:"hidden_act,omitempty"`          // must be "silu" (or empty)
	RMSNormEps            float64  `json:"rms_norm_eps"`
	RopeTheta             float64  `json:"rope_theta,omitempty"` // 0: 10000
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	// AttentionBias (Llama, Mistral, Qwen3): biases on q, k, v and o
	// projections. Qwen2 always has q, k, v biases and no o bias, whatever
	// this says (Family resolves it).
	AttentionBias    bool     `json:"attention_bias"`
	MLPBias          bool     `json:"mlp_bias,omitempty"` // unsupported; must be false
	InitializerRange float64  `json:"initializer_range,omitempty"`
	BOSTokenID       TokenIDs `json:"bos_token_id,omitempty"`
	EOSTokenID       TokenIDs `json:"eos_token_id,omitempty"`
	PadTokenID       TokenIDs `json:"pad_token_id,omitempty"`
	TorchDType       string   `json:"torch_dtype,omitempty"`
	UseCache         bool     `json:"use_cache"`
	// RopeScaling is rope_scaling as written (absent or null: plain RoPE);
	// Rope parses it, RoPE computes its frequencies. It is written back
	// unchanged.
	RopeScaling json.RawMessage `json:"rope_scaling,omitempty"`
	// SlidingWindow is accepted only when UseSlidingWindow is false.
	UseSlidingWindow bool `json:"use_sliding_window,omitempty"`
	// Extra holds config fields this struct does not name; they are written
	// back unchanged by WriteConfig.
	Extra map[string]json.RawMessage `json:"-"`
}

// TokenIDs is a token id field that config.json stores as a number, a list
// of numbers or null. It marshals as a bare number when it holds one id.
type TokenIDs []int

// UnmarshalJSON accepts null, a number or a list of numbers.
func (t *TokenIDs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*t = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var ids []int
		if err := json.Unmarshal(b, &ids); err != nil {
			return err
		}
		*t = ids
		return nil
	}
	var id int
	if err := json.Unmarshal(b, &id); err != nil {
		return err
	}
	*t = TokenIDs{id}
	return nil
}

// MarshalJSON writes null, a bare number or a list.
func (t TokenIDs) MarshalJSON() ([]byte, error) {
	switch len(t) {
	case 0:
		return []byte("null"), nil
	case 1:
		return json.Marshal(t[0])
	}
	return json.Marshal([]int(t))
}

// First returns the first id, or -1 when there is none.
func (t TokenIDs) First() int {
	if len(t) == 0 {
		return -1
	}
	return t[0]
}

// KVHeads returns the number of key/value heads (grouped-query attention).
func (c Config) KVHeads() int {
	if c.NumKeyValueHeads == 0 {
		return c.NumAttentionHeads
	}
	return c.NumKeyValueHeads
}

// HeadDimension returns the per-head width D.
func (c Config) HeadDimension() int {
	if c.HeadDim != 0 {
		return c.HeadDim
	}
	if c.NumAttentionHeads == 0 {
		return 0
	}
	return c.HiddenSize / c.NumAttentionHeads
}

// Theta returns the RoPE base.
func (c Config) Theta() float64 {
	if c.RopeTheta == 0 {
		return 10000
	}
	return c.RopeTheta
}

// Validate checks that the config describes a model this package can build.
func (c Config) Validate() error {
	if _, err := c.Family(); err != nil {
		return err
	}
	pos := map[string]int{
		"vocab_size": c.VocabSize, "hidden_size": c.HiddenSize, "intermediate_size": c.IntermediateSize,
		"num_hidden_layers": c.NumHiddenLayers, "num_attention_heads": c.NumAttentionHeads,
	}
	for name, v := range pos {
		if v <= 0 {
			return fmt.Errorf("config: %s must be positive, got %d", name, v)
		}
	}
	if c.KVHeads() <= 0 || c.NumAttentionHeads%c.KVHeads() != 0 {
		return fmt.Errorf("config: num_attention_heads %d is not a multiple of num_key_value_heads %d", c.NumAttentionHeads, c.KVHeads())
	}
	if d := c.HeadDimension(); d <= 0 || d%2 != 0 {
		return fmt.Errorf("config: head_dim %d must be positive and even", d)
	}
	if c.HeadDim == 0 && c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("config: hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	}
	if c.HiddenAct != "" && c.HiddenAct != "silu" {
		return fmt.Errorf("config: hidden_act %q is not supported (want silu)", c.HiddenAct)
	}
	if c.MLPBias {
		return fmt.Errorf("config: mlp_bias=true is not supported")
	}
	if rs, _ := c.Rope(); rs.Kind() == RopeDynamic && c.MaxPositionEmbeddings <= 0 {
		return fmt.Errorf("config: rope_scaling dynamic needs a positive max_position_embeddings, got %d", c.MaxPositionEmbeddings)
	}
	if c.UseSlidingWindow {
		return fmt.Errorf("config: use_sliding_window=true is not supported")
	}
	// Mistral applies sliding_window whenever it is set (Qwen2 and Qwen3
	// only with use_sliding_window, checked above).
	if sw, ok := c.Extra["sliding_window"]; ok && c.traits().SlidingWindowAlways && string(bytes.TrimSpace(sw)) != "null" {
		return fmt.Errorf("config: %s sliding_window %s is not supported (only full attention)", c.ModelType, sw)
	}
	if c.RMSNormEps <= 0 {
		return fmt.Errorf("config: rms_norm_eps must be positive, got %g", c.RMSNormEps)
	}
	return nil
}

// known lists the JSON keys Config names, so that Extra keeps only the rest.
var knownConfigKeys = func() map[string]bool {
	b, _ := json.Marshal(Config{})
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	keys := map[string]bool{}
	for k := range m {
		keys[k] = true
	}
	for _, k := range []string{"num_key_value_heads", "head_dim", "hidden_act", "rope_theta", "mlp_bias",
		"initializer_range", "bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "rope_scaling",
		"use_sliding_window", "architectures"} {
		keys[k] = true
	}
	return keys
}()

// ParseConfig decodes a config.json document. Unknown fields go to Extra.
func ParseConfig(b []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	for k, v := range all {
		if !knownConfigKeys[k] {
			if c.Extra == nil {
				c.Extra = map[string]json.RawMessage{}
			}
			c.Extra[k] = v
		}
	}
	if c.ModelType == "" {
		c.ModelType = "llama"
	}
	return c, nil
}

// LoadConfig reads dir/config.json.
func LoadConfig(dir string) (Config, error) {
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", p, err)
	}
	return c, nil
}

// MarshalConfig encodes c as config.json with the fields transformers,
// transformers.js and optimum read: architectures and head_dim are filled in
// when unset, and Extra fields are merged back.
func MarshalConfig(c Config) ([]byte, error) {
	if len(c.Architectures) == 0 {
		arch := c.traits().Architecture
		if arch == "" {
			arch = families["llama"].Architecture
		}
		c.Architectures = []string{arch}
	}
	c.HeadDim = c.HeadDimension()
	c.NumKeyValueHeads = c.KVHeads()
	if c.HiddenAct == "" {
		c.HiddenAct = "silu"
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	for k, v := range c.Extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return append(out, '\n'), nil
}
