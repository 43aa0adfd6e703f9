package llama

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/model/safetensors"
)

// Field-for-field copies of the published config.json files.
const (
	smolLM2Config = `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 576,
  "initializer_range": 0.041666666666666664, "intermediate_size": 1536, "is_llama_config": true,
  "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 9,
  "num_hidden_layers": 30, "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_interleaved": false, "rope_scaling": null, "rope_theta": 100000, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true, "vocab_size": 49152
}`
	qwen25Config = `{
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936
}`
	llama3Config = `{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "rms_norm_eps": 1e-5,
  "eos_token_id": [128001, 128008, 128009], "bos_token_id": 128000}`
)

func TestParseRealConfigs(t *testing.T) {
	smol, err := ParseConfig([]byte(smolLM2Config))
	if err != nil {
		t.Fatal(err)
	}
	if err := smol.Validate(); err != nil {
		t.Fatal(err)
	}
	// SmolLM2-135M has 134,515,008 parameters (tied head).
	if n := smol.NumParams(); n != 134515008 {
		t.Errorf("SmolLM2-135M params = %d", n)
	}
	qwen, err := ParseConfig([]byte(qwen25Config))
	if err != nil {
		t.Fatal(err)
	}
	if err := qwen.Validate(); err != nil {
		t.Fatal(err)
	}
	// Qwen2.5-0.5B: 494,032,768 parameters.
	if n := qwen.NumParams(); n != 494032768 || !qwen.QKVBias() || qwen.OBias() || qwen.HeadDimension() != 64 {
		t.Errorf("Qwen2.5-0.5B params = %d qkvBias=%v oBias=%v D=%d", n, qwen.QKVBias(), qwen.OBias(), qwen.HeadDimension())
	}
	// Unknown fields survive a write.
	b, err := MarshalConfig(qwen)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"sliding_window": 32768`) || !strings.Contains(string(b), `"head_dim": 64`) {
		t.Errorf("MarshalConfig lost fields:\n%s", b)
	}
	l3, err := ParseConfig([]byte(llama3Config))
	if err != nil {
		t.Fatal(err)
	}
	if len(l3.EOSTokenID) != 3 || l3.BOSTokenID.First() != 128000 {
		t.Errorf("token id lists: eos %v bos %v", l3.EOSTokenID, l3.BOSTokenID)
	}
	for _, s := range ShapeNames() {
		c, err := ShapeConfig(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("shape %s: %v", s, err)
		}
	}
	if smolShape, _ := ShapeConfig("smollm2-135m"); smolShape.NumParams() != smol.NumParams() {
		t.Errorf("smollm2-135m shape has %d params, the real config %d", smolShape.NumParams(), smol.NumParams())
	}
}

func TestValidateRejectsUnsupported(t *testing.T) {
	base, _ := ShapeConfig("tiny")
	mut := map[string]func(*Config){
		"gelu":         func(c *Config) { c.HiddenAct = "gelu" },
		"rope scaling": func(c *Config) { c.RopeScaling = json.RawMessage(`{"type":"longrope","factor":2}`) },
		"rope key":     func(c *Config) { c.RopeScaling = json.RawMessage(`{"rope_type":"llama3","factor":8}`) },
		"dynamic no max": func(c *Config) {
			c.RopeScaling = json.RawMessage(`{"rope_type":"dynamic","factor":2}`)
			c.MaxPositionEmbeddings = 0
		},
		"sliding window": func(c *Config) { c.UseSlidingWindow = true },
		"heads":          func(c *Config) { c.NumKeyValueHeads = 3 },
		"model type":     func(c *Config) { c.ModelType = "gpt2" },
		"mlp bias":       func(c *Config) { c.MLPBias = true },
		"mistral window": func(c *Config) {
			c.ModelType = "mistral"
			c.Extra = map[string]json.RawMessage{"sliding_window": json.RawMessage("4096")}
		},
	}
	for name, f := range mut {
		c := base
		f(&c)
		if c.Validate() == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// A bf16, sharded Hugging Face checkpoint loads with the values bf16 holds,
// and wrong or extra tensors are reported by name.
func TestLoadSafetensorsShardedBF16(t *testing.T) {
	cfg := testConfigs(t)["qwen2_tied_bias"]
	w := mustRandom(t, cfg, 5)
	dir := t.TempDir()
	tensors := w.SafetensorsTensors(cfg)
	tensors = append(tensors, safetensors.Tensor{Name: "model.layers.0.self_attn.rotary_emb.inv_freq", Shape: []int64{8}, Data: make([]float32, 8)})
	if _, err := safetensors.WriteDir(dir, tensors, safetensors.BF16, 40000, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, safetensors.IndexFile)); err != nil {
		t.Fatalf("expected a sharded checkpoint: %v", err)
	}
	got, err := LoadSafetensors(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Check(cfg); err != nil {
		t.Fatal(err)
	}
	for n, ten := range w {
		for i, v := range ten.Data {
			want := safetensorsBF16(v)
			if got[n].Data[i] != want {
				t.Fatalf("%s[%d] = %v, want bf16(%v) = %v", n, i, got[n].Data[i], v, want)
			}
		}
	}
	untied := cfg
	untied.TieWordEmbeddings = false
	if _, err := LoadSafetensors(dir, untied); err == nil || !strings.Contains(err.Error(), LMHeadName) {
		t.Errorf("missing lm_head not reported: %v", err)
	}
	noBias := cfg
	noBias.ModelType = "llama"
	if _, err := LoadSafetensors(dir, noBias); err == nil || !strings.Contains(err.Error(), "bias") {
		t.Errorf("unexpected bias tensors not reported: %v", err)
	}
}

func safetensorsBF16(v float32) float32 {
	return float32frombits(uint32(safetensors.F32ToBF16(v)) << 16)
}

func TestRandomWeightsDeterministic(t *testing.T) {
	cfg := testConfigs(t)["tiny"]
	a, b, c := mustRandom(t, cfg, 1), mustRandom(t, cfg, 1), mustRandom(t, cfg, 2)
	for n := range a {
		if maxAbsDiff(a[n].Data, b[n].Data) != 0 {
			t.Fatalf("%s differs for the same seed", n)
		}
		if maxAbsDiff(a[n].Data, c[n].Data) == 0 {
			t.Fatalf("%s equal for different seeds", n)
		}
	}
}

// The config.json fields of Qwen/Qwen3-0.6B and meta-llama/Llama-3.2-1B-Instruct.
const (
	qwen3Config = `{
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936
}`
	llama32Config = `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
  "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
  "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0",
  "use_cache": true, "vocab_size": 128256
}`
)

// Qwen3-0.6B (596,049,920 parameters: q/k norms, head_dim 128 with hidden
// 1024) and Llama-3.2-1B (1,235,814,400: llama3 rope scaling) parse,
// validate, resolve their family and write back rope_scaling unchanged.
func TestParseQwen3AndLlama32Configs(t *testing.T) {
	for _, c := range []struct {
		raw    string
		params int64
		want   Family
	}{
		{qwen3Config, 596049920, Family{ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", QKNorm: true, HeadDim: 128, TiedEmbeddings: true, Rope: RopeScaling{}}},
		{llama32Config, 1235814400, Family{ModelType: "llama", Architecture: "LlamaForCausalLM", HeadDim: 64, TiedEmbeddings: true,
			Rope: RopeScaling{Type: RopeLlama3, Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}}},
	} {
		cfg, err := ParseConfig([]byte(c.raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", cfg.ModelType, err)
		}
		if n := cfg.NumParams(); n != c.params {
			t.Errorf("%s: %d params, want %d", cfg.ModelType, n, c.params)
		}
		fam, err := cfg.Family()
		if err != nil || fmt.Sprintf("%+v", fam) != fmt.Sprintf("%+v", c.want) {
			t.Errorf("family %+v (%v), want %+v", fam, err, c.want)
		}
		b, err := MarshalConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseConfig(b)
		if err != nil {
			t.Fatal(err)
		}
		if rs, _ := back.Rope(); fmt.Sprintf("%+v", rs) != fmt.Sprintf("%+v", c.want.Rope) || !strings.Contains(string(b), c.want.Architecture) {
			t.Errorf("round trip lost rope_scaling or architectures:\n%s", b)
		}
	}
	// Without architectures, MarshalConfig names the family's class.
	cfg, _ := ShapeConfig("tiny-qwen3")
	if b, _ := MarshalConfig(cfg); !strings.Contains(string(b), `"Qwen3ForCausalLM"`) {
		t.Errorf("tiny-qwen3 config.json lacks Qwen3ForCausalLM:\n%s", b)
	}
}
