package llama

import (
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
	// qwen2.5-0.5b is Qwen/Qwen2.5-0.5B's config.json (q/k/v biases).
	"qwen2.5-0.5b": {
		ModelType: "qwen2", VocabSize: 151936, HiddenSize: 896, IntermediateSize: 4864,
		NumHiddenLayers: 24, NumAttentionHeads: 14, NumKeyValueHeads: 2, HeadDim: 64,
		RMSNormEps: 1e-6, RopeTheta: 1000000, MaxPositionEmbeddings: 32768,
		TieWordEmbeddings: true, InitializerRange: 0.02,
	},
}

// ShapeNames returns the names ShapeConfig accepts, sorted.
func ShapeNames() []string {
	var names []string
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ShapeConfig returns the config of a named architecture ("tiny",
// "smollm2-135m", "qwen2.5-0.5b") with the default tokenizer's special ids.
func ShapeConfig(name string) (Config, error) {
	c, ok := shapes[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown shape %q (want one of %v)", name, ShapeNames())
	}
	c.HiddenAct = "silu"
	c.BOSTokenID = TokenIDs{ByteImStart}
	c.EOSTokenID = TokenIDs{ByteImEnd}
	c.PadTokenID = TokenIDs{ByteEndOfText}
	c.TorchDType = "float32"
	c.UseCache = true
	return c, nil
}
