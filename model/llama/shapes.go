package llama

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Special token ids of the project's default byte-level tokenizer
// (ByteTokenizerJSON): ids 0..255 are the bytes themselves.
const (
	ByteEndOfText = 256 // <|endoftext|>: padding and end of document
	ByteImStart   = 257 // <|im_start|>: opens a chat turn
	ByteImEnd     = 258 // <|im_end|>: closes a chat turn; generation stops here
	ByteVocabSize = 259 // tokens in the default tokenizer
)

// shapes are the architectures --shape accepts. The real models' special
// token ids are replaced by the default tokenizer's, since random models ship
// with that tokenizer unless told otherwise.
var shapes = map[string]Config{
	// tiny is for tests: small enough that ORT and the Go reference run in
	// milliseconds, yet with GQA (2 query heads per kv head) and an untied head.
	"tiny": {
		ModelType: "llama", VocabSize: 320, HiddenSize: 64, IntermediateSize: 160,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16,
		RMSNormEps: 1e-5, RopeTheta: 10000, MaxPositionEmbeddings: 2048,
		TieWordEmbeddings: false, InitializerRange: 0.02,
	},
	// smollm2-135m is HuggingFaceTB/SmolLM2-135M's config.json.
	"smollm2-135m": {
		ModelType: "llama", VocabSize: 49152, HiddenSize: 576, IntermediateSize: 1536,
		NumHiddenLayers: 30, NumAttentionHeads: 9, NumKeyValueHeads: 3, HeadDim: 64,
		RMSNormEps: 1e-5, RopeTheta: 100000, MaxPositionEmbeddings: 8192,
		TieWordEmbeddings: true, InitializerRange: 0.041666666666666664,
	},
	// The tiny family shapes keep every feature of the real config they are
	// named after, shrunk to "tiny"'s size (eos lists use the default
	// tokenizer's ids). tiny-qwen2.5 is Qwen2.5-0.5B: qwen2 (q/k/v
	// biases), tied, rope_theta 1e6, eps 1e-6, eos [<|im_end|>,
	// <|endoftext|>] as Qwen's [151645, 151643].
	"tiny-qwen2.5": {
		ModelType: "qwen2", VocabSize: 320, HiddenSize: 64, IntermediateSize: 160,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16,
		RMSNormEps: 1e-6, RopeTheta: 1000000, MaxPositionEmbeddings: 32768,
		TieWordEmbeddings: true, InitializerRange: 0.02,
		EOSTokenID: TokenIDs{ByteImEnd, ByteEndOfText},
	},
	// tiny-qwen3 is Qwen3-0.6B: qwen3 (q/k norm, no bias), explicit head_dim
	// with heads*head_dim = 2*hidden (16*128 vs 1024 there), tied.
	"tiny-qwen3": {
		ModelType: "qwen3", VocabSize: 320, HiddenSize: 64, IntermediateSize: 160,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 32,
		RMSNormEps: 1e-6, RopeTheta: 1000000, MaxPositionEmbeddings: 40960,
		TieWordEmbeddings: true, InitializerRange: 0.02,
		EOSTokenID: TokenIDs{ByteImEnd, ByteEndOfText},
	},
	// tiny-llama3.2 is Llama-3.2-1B: llama with rope_scaling llama3 (factor
	// 32, original context 8192; at head_dim 16 and theta 5e5 its
	// frequencies fall in all three bands), tied, an eos list as Llama's
	// [128001, 128008, 128009].
	"tiny-llama3.2": {
		ModelType: "llama", VocabSize: 320, HiddenSize: 64, IntermediateSize: 160,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16,
		RMSNormEps: 1e-5, RopeTheta: 500000, MaxPositionEmbeddings: 131072,
		TieWordEmbeddings: true, InitializerRange: 0.02, RopeScaling: llama32RopeScaling,
		EOSTokenID: TokenIDs{ByteEndOfText, ByteImEnd},
	},
	// The 135M-class family shapes are SmolLM2-135M's sizes with each
	// family's features, for benchmarks: qwen2.5-135m (q/k/v biases, theta
	// 1e6), qwen3-135m (q/k norm, head_dim 128 = 2*hidden/heads) and
	// llama3.2-135m (llama3 rope scaling).
	"qwen2.5-135m": {
		ModelType: "qwen2", VocabSize: 49152, HiddenSize: 576, IntermediateSize: 1536,
		NumHiddenLayers: 30, NumAttentionHeads: 9, NumKeyValueHeads: 3, HeadDim: 64,
		RMSNormEps: 1e-6, RopeTheta: 1000000, MaxPositionEmbeddings: 32768,
		TieWordEmbeddings: true, InitializerRange: 0.041666666666666664,
		EOSTokenID: TokenIDs{ByteImEnd, ByteEndOfText},
	},
	"qwen3-135m": {
		ModelType: "qwen3", VocabSize: 49152, HiddenSize: 576, IntermediateSize: 1536,
		NumHiddenLayers: 30, NumAttentionHeads: 9, NumKeyValueHeads: 3, HeadDim: 128,
		RMSNormEps: 1e-6, RopeTheta: 1000000, MaxPositionEmbeddings: 40960,
		TieWordEmbeddings: true, InitializerRange: 0.041666666666666664,
		EOSTokenID: TokenIDs{ByteImEnd, ByteEndOfText},
	},
	"llama3.2-135m": {
		ModelType: "llama", VocabSize: 49152, HiddenSize: 576, IntermediateSize: 1536,
		NumHiddenLayers: 30, NumAttentionHeads: 9, NumKeyValueHeads: 3, HeadDim: 64,
		RMSNormEps: 1e-5, RopeTheta: 500000, MaxPositionEmbeddings: 131072,
		TieWordEmbeddings: true, InitializerRange: 0.041666666666666664, RopeScaling: llama32RopeScaling,
		EOSTokenID: TokenIDs{ByteEndOfText, ByteImEnd},
	},
	// qwen2.5-0.5b is Qwen/Qwen2.5-0.5B's config.json (q/k/v biases).
	"qwen2.5-0.5b": {
		ModelType: "qwen2", VocabSize: 151936, HiddenSize: 896, IntermediateSize: 4864,
		NumHiddenLayers: 24, NumAttentionHeads: 14, NumKeyValueHeads: 2, HeadDim: 64,
		RMSNormEps: 1e-6, RopeTheta: 1000000, MaxPositionEmbeddings: 32768,
		TieWordEmbeddings: true, InitializerRange: 0.02,
	},
}

// llama32RopeScaling is Llama-3.2-1B's rope_scaling, as its config.json
// writes it.
var llama32RopeScaling = json.RawMessage(`{"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}`)

// ShapeNames returns the names ShapeConfig accepts, sorted.
func ShapeNames() []string {
	var names []string
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ShapeConfig returns the config of a named architecture (see ShapeNames:
// "tiny", the tiny family shapes "tiny-qwen2.5", "tiny-qwen3",
// "tiny-llama3.2", the 135M-class ones, "smollm2-135m", "qwen2.5-0.5b")
// with the default tokenizer's special ids; a shape with an eos list keeps
// it.
func ShapeConfig(name string) (Config, error) {
	c, ok := shapes[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown shape %q (want one of %v)", name, ShapeNames())
	}
	c.HiddenAct = "silu"
	c.BOSTokenID = TokenIDs{ByteImStart}
	if len(c.EOSTokenID) == 0 {
		c.EOSTokenID = TokenIDs{ByteImEnd}
	}
	c.EOSTokenID = append(TokenIDs(nil), c.EOSTokenID...)
	c.PadTokenID = TokenIDs{ByteEndOfText}
	c.TorchDType = "float32"
	c.UseCache = true
	return c, nil
}
