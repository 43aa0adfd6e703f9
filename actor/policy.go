package actor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/toolrl/toolrl/internal/ort"
	"github.com/toolrl/toolrl/tokenizer"
)

// LoadOptions says which model folder to load and how to run it.
type LoadOptions struct {
	// Dir is a Hugging Face model folder: config.json, tokenizer.json,
	// tokenizer_config.json, generation_config.json (optional) and an ONNX
	// decoder in optimum's text-generation-with-past layout.
	Dir string
	// ModelFile is the ONNX file relative to Dir; empty means the first of
	// onnx/model.onnx, onnx/decoder_model_merged.onnx, model.onnx,
	// decoder_model_merged.onnx that exists.
	ModelFile string
	// Provider is "cpu" (default) or "cuda".
	Provider string
	// DeviceID selects the GPU for the cuda provider.
	DeviceID int
	// IntraOpThreads and InterOpThreads size ONNX Runtime's thread pools;
	// 0 leaves ONNX Runtime's default (one thread per core).
	IntraOpThreads int
	InterOpThreads int
	// Spinning lets ONNX Runtime's pool threads busy-wait for work (ONNX
	// Runtime's own default). The actor turns it off by default: between
	// Runs the Go side samples, detokenises and runs tools on the same cores,
	// and on a shared machine spinning threads take the CPU the other
	// runnable threads need (measured: several times slower decode steps).
	Spinning bool
	// SessionConfig holds further ONNX Runtime session configuration entries
	// (for example "session.intra_op.allow_spinning"), applied in key order
	// after the options above.
	SessionConfig map[string]string
}

// modelCandidates are the ONNX files Load looks for, in order.
var modelCandidates = []string{
	"onnx/model.onnx",
	"onnx/decoder_model_merged.onnx",
	"model.onnx",
	"decoder_model_merged.onnx",
}

// Policy is a loaded model: an ONNX Runtime session, the model's tokenizer
// and its generation settings. Score is safe for concurrent use; an Engine
// built on the policy is owned by one goroutine. Close releases the session.
type Policy struct {
	dir, modelPath string
	sess           *ortgo.DynamicAdvancedSession
	io             ioLayout
	tok            *tokenizer.Tokenizer
	special        tokenizer.SpecialTokens
	maxPositions   int
	config         modelConfig // config.json, checked against the graph
	scoreBudget    int         // logits bytes per scoring Run; 0: scoreLogitsBytes
	prefillBudget  int         // logits bytes per prefill Run; 0: prefillLogitsBytes
}

// Load opens the model folder described by opts. The ONNX file's inputs and
// outputs are discovered from the model and checked: an input or output the
// actor cannot feed, or one with an unexpected element type, is an error that
// names it.
func Load(ctx context.Context, opts LoadOptions) (*Policy, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ort.Init(); err != nil {
		return nil, fmt.Errorf("load policy %s: %w", opts.Dir, err)
	}
	p := &Policy{dir: opts.Dir}
	var err error
	if p.modelPath, err = findModelFile(opts); err != nil {
		return nil, err
	}
	if err := p.readConfig(); err != nil {
		return nil, err
	}
	tokPath := filepath.Join(opts.Dir, "tokenizer.json")
	if p.tok, err = tokenizer.Load(tokPath); err != nil {
		return nil, fmt.Errorf("load policy %s: %w", opts.Dir, err)
	}
	if p.special, err = tokenizer.LoadSpecialFromConfig(opts.Dir, p.tok); err != nil {
		return nil, fmt.Errorf("load policy %s: %w", opts.Dir, err)
	}

	so, err := sessionOptions(opts)
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	// The graph's declared interface, read without loading the weights; if
	// the file cannot be walked, ask ONNX Runtime (a second session load).
	// ONNX Runtime does not list a graph's operators: a file that cannot be
	// walked is taken for optimum's layout (discoverIO then refuses a fused
	// graph for its missing position_ids).
	ins, outs, ops, err := readGraphIOOps(p.modelPath)
	if err != nil {
		if ins, outs, err = ortgo.GetInputOutputInfoWithOptions(p.modelPath, so); err != nil {
			return nil, fmt.Errorf("load policy: read inputs and outputs of %s: %w", p.modelPath, err)
		}
	}
	if p.io, err = discoverIO(ins, outs, ops[gqaOpType]); err != nil {
		return nil, fmt.Errorf("load policy %s: %w", p.modelPath, err)
	}
	if p.sess, err = ortgo.NewDynamicAdvancedSession(p.modelPath, p.io.inputNames, p.io.outputNames, so); err != nil {
		return nil, fmt.Errorf("load policy: create session for %s: %w", p.modelPath, err)
	}
	if err := p.checkConfig(); err != nil {
		p.Close()
		return nil, err
	}
	if v := p.tok.VocabSize(); v > p.io.vocab {
		p.Close()
		return nil, fmt.Errorf("load policy %s: tokenizer has %d tokens but the model's logits have %d", opts.Dir, v, p.io.vocab)
	}
	if err := p.checkFinite(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func findModelFile(opts LoadOptions) (string, error) {
	if opts.ModelFile != "" {
		path := filepath.Join(opts.Dir, opts.ModelFile)
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("load policy: model file: %w", err)
		}
		return path, nil
	}
	for _, c := range modelCandidates {
		path := filepath.Join(opts.Dir, c)
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("load policy %s: no ONNX model (looked for %s)", opts.Dir, strings.Join(modelCandidates, ", "))
}

// sessionOptions builds ONNX Runtime session options for the provider.
func sessionOptions(opts LoadOptions) (*ortgo.SessionOptions, error) {
	so, err := ortgo.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("load policy: session options: %w", err)
	}
	fail := func(err error) (*ortgo.SessionOptions, error) {
		so.Destroy()
		return nil, err
	}
	if opts.IntraOpThreads > 0 {
		if err := so.SetIntraOpNumThreads(opts.IntraOpThreads); err != nil {
			return fail(fmt.Errorf("load policy: intra-op threads %d: %w", opts.IntraOpThreads, err))
		}
	}
	if opts.InterOpThreads > 0 {
		if err := so.SetInterOpNumThreads(opts.InterOpThreads); err != nil {
			return fail(fmt.Errorf("load policy: inter-op threads %d: %w", opts.InterOpThreads, err))
		}
	}
	if !opts.Spinning {
		for _, k := range []string{"session.intra_op.allow_spinning", "session.inter_op.allow_spinning"} {
			if err := so.AddSessionConfigEntry(k, "0"); err != nil {
				return fail(fmt.Errorf("load policy: session config %s=0: %w", k, err))
			}
		}
	}
	keys := make([]string, 0, len(opts.SessionConfig))
	for k := range opts.SessionConfig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := so.AddSessionConfigEntry(k, opts.SessionConfig[k]); err != nil {
			return fail(fmt.Errorf("load policy: session config %s=%s: %w", k, opts.SessionConfig[k], err))
		}
	}
	switch strings.ToLower(opts.Provider) {
	case "", "cpu":
	case "cuda":
		cuda, err := ortgo.NewCUDAProviderOptions()
		if err != nil {
			return fail(fmt.Errorf("load policy: execution provider CUDAExecutionProvider is not available in %s: %w", ort.LoadedPath(), err))
		}
		defer cuda.Destroy()
		if err := cuda.Update(map[string]string{"device_id": strconv.Itoa(opts.DeviceID)}); err != nil {
			return fail(fmt.Errorf("load policy: execution provider CUDAExecutionProvider is not available in %s (device_id %d): %w", ort.LoadedPath(), opts.DeviceID, err))
		}
		if err := so.AppendExecutionProviderCUDA(cuda); err != nil {
			return fail(fmt.Errorf("load policy: execution provider CUDAExecutionProvider is not available in %s: %w", ort.LoadedPath(), err))
		}
	default:
		return fail(fmt.Errorf("load policy: unknown provider %q (want cpu or cuda)", opts.Provider))
	}
	return so, nil
}

// readConfig takes the context length from config.json.
func (p *Policy) readConfig() error {
	path := filepath.Join(p.dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("load policy: %w", err)
	}
	var c modelConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("load policy: parse %s: %w", path, err)
	}
	p.maxPositions = c.MaxPositionEmbeddings
	p.config = c
	return nil
}

// modelConfig is what the actor checks of config.json against the graph.
type modelConfig struct {
	MaxPositionEmbeddings int `json:"max_position_embeddings"`
	VocabSize             int `json:"vocab_size"`
	NumHiddenLayers       int `json:"num_hidden_layers"`
	NumKeyValueHeads      int `json:"num_key_value_heads"`
	NumAttentionHeads     int `json:"num_attention_heads"`
	HeadDim               int `json:"head_dim"`
	HiddenSize            int `json:"hidden_size"`
	// EOSTokenID is a number or a list of numbers.
	EOSTokenID json.RawMessage `json:"eos_token_id"`
	// Quantization is the record toolrl model build --quantize writes
	// (model/llama.QuantizationKey); only its name is read.
	Quantization *struct {
		Name string `json:"name"`
	} `json:"toolrl_quantization"`
}

// checkConfig refuses a config.json that contradicts the ONNX graph (the
// graph is what runs; a contradiction means the folder was assembled from
// two models), naming both values. Keys the config leaves out are not
// checked.
func (p *Policy) checkConfig() error {
	c, io := p.config, p.io
	where := fmt.Sprintf("%s contradicts %s", filepath.Join(p.dir, "config.json"), p.modelPath)
	if c.VocabSize > 0 && c.VocabSize != io.vocab {
		return fmt.Errorf("load policy: %s: vocab_size %d, the graph's logits have %d", where, c.VocabSize, io.vocab)
	}
	if c.NumHiddenLayers > 0 && c.NumHiddenLayers != io.layers {
		return fmt.Errorf("load policy: %s: num_hidden_layers %d, the graph has %d layers of past key/values", where, c.NumHiddenLayers, io.layers)
	}
	kv := c.NumKeyValueHeads
	if kv == 0 {
		kv = c.NumAttentionHeads
	}
	if kv > 0 && io.kvHeads > 0 && kv != io.kvHeads {
		return fmt.Errorf("load policy: %s: num_key_value_heads %d, the graph's past key/values have %d heads", where, kv, io.kvHeads)
	}
	hd := c.HeadDim
	if hd == 0 && c.NumAttentionHeads > 0 {
		hd = c.HiddenSize / c.NumAttentionHeads
	}
	if hd > 0 && io.headDim > 0 && hd != io.headDim {
		return fmt.Errorf("load policy: %s: head_dim %d, the graph's past key/values have %d", where, hd, io.headDim)
	}
	var ids []int
	var one int
	if len(c.EOSTokenID) > 0 && string(c.EOSTokenID) != "null" {
		if err := json.Unmarshal(c.EOSTokenID, &one); err == nil {
			ids = []int{one}
		} else if err := json.Unmarshal(c.EOSTokenID, &ids); err != nil {
			return fmt.Errorf("load policy: %s: eos_token_id %s is neither a number nor a list of numbers", filepath.Join(p.dir, "config.json"), c.EOSTokenID)
		}
	}
	for _, id := range ids {
		if id < 0 || id >= io.vocab {
			return fmt.Errorf("load policy: %s: eos_token_id %d is outside the graph's vocabulary [0, %d)", where, id, io.vocab)
		}
	}
	return nil
}

// Close releases the ONNX Runtime session. The policy and every engine on
// it must not be used afterwards.
func (p *Policy) Close() error {
	if p.sess == nil {
		return nil
	}
	err := p.sess.Destroy()
	p.sess = nil
	return err
}

// Tokenizer is the model's tokenizer (tokenizer.json).
func (p *Policy) Tokenizer() *tokenizer.Tokenizer { return p.tok }

// Special is the model's special tokens, with generation_config.json's EOS
// ids.
func (p *Policy) Special() tokenizer.SpecialTokens { return p.special }

// EOS returns the ids that end generation by default.
func (p *Policy) EOS() []int32 { return append([]int32(nil), p.special.EOSIDs...) }

// VocabSize is the width of the model's logits.
func (p *Policy) VocabSize() int { return p.io.vocab }

// Layers is the number of decoder layers (key/value cache pairs).
func (p *Policy) Layers() int { return p.io.layers }

// MaxPositions is the model's context length (config.json
// max_position_embeddings; 0 when absent).
func (p *Policy) MaxPositions() int { return p.maxPositions }

// ModelPath is the ONNX file the policy runs.
func (p *Policy) ModelPath() string { return p.modelPath }

// Quantization names how the model's weights are quantized, as config.json
// records it (e.g. "int8-b32-acc4"); "" for a float32 model or one whose
// config does not say.
func (p *Policy) Quantization() string {
	if p.config.Quantization == nil {
		return ""
	}
	return p.config.Quantization.Name
}

// KVType is the element type of the key/value cache: "float32" or
// "float16".
func (p *Policy) KVType() string {
	if p.io.kvType == ortgo.TensorElementDataTypeFloat16 {
		return "float16"
	}
	return "float32"
}
