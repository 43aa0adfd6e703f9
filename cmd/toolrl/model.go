package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/internal/procmem"
	"github.com/toolrl/toolrl/model/llama"
)

// newModelCmd groups the model verbs: build (ONNX builder, model/llama) and the
// default policy's data/train/eval (models/calc).
func newModelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Build ONNX policies and train the default calc policy",
	}
	cmd.AddCommand(newModelBuildCmd())
	cmd.AddCommand(newModelCalcCmds()...)
	return cmd
}

func newModelBuildCmd() *cobra.Command {
	var f llama.BuildFlags
	cmd := &cobra.Command{
		Use:   "build (--from-safetensors DIR | --random --shape NAME) --out DIR",
		Short: "Build a Llama-family ONNX model folder from safetensors or random weights",
		Long: `Build writes a Hugging Face model folder that transformers.js, optimum and the
toolrl actor load: config.json, generation_config.json, tokenizer.json,
tokenizer_config.json (with a chat template) and onnx/model.onnx in optimum's
text-generation-with-past layout (onnx/model.onnx_data holds the weights when
they pass 2 GB).

Weights come from a Hugging Face safetensors checkpoint (Llama incl. Llama-3.x
rope scaling, Qwen2/2.5, Qwen3, SmolLM, Mistral without sliding window; rope
types default, linear, dynamic, yarn, llama3; one file or a sharded index; f32,
f16 or bf16),
or are seeded random weights of a named shape: ` + strings.Join(llama.ShapeNames(), ", ") + `.

The tokenizer is --tokenizer FILE (a tokenizer.json; a tokenizer_config.json
beside it is copied too), else the checkpoint's own, else toolrl's default
byte-level tokenizer (bytes 0-255 plus <|endoftext|>, <|im_start|>, <|im_end|>).

--quantize int8|int4 writes the linear layers as ONNX Runtime MatMulNBits
(asymmetric block-wise weights with zero points, --block-size input features
per scale; --accuracy-level 4 lets the CPU kernel quantize activations to int8
per block, 0 computes in float32); --quantize-lm-head quantizes the LM head
too. config.json records the quantization (toolrl_quantization) and
model.safetensors, when written, keeps the full-precision weights.

--fused writes the graph onnxruntime-genai's builder emits instead of optimum's
plain operators: GroupQueryAttention (rotary embedding inside, the key/value
cache a preallocated buffer appended in place), SkipSimplifiedLayerNormalization
fusing each residual add with the next RMSNorm, one packed q/k/v projection
(MatMulNBits with --quantize). Its inputs are input_ids, attention_mask and
past_key_values.N.* (no position_ids); the toolrl actor runs both layouts.
Dynamic NTK rope scaling cannot be fused and is refused.`,
		Example: `  # a trainer's checkpoint becomes an ONNX policy
  toolrl model build --from-safetensors ./checkpoints/step-500 --out ./policy

  # random SmolLM2-135M-shaped model for benchmarks
  toolrl model build --random --shape smollm2-135m --seed 1 --out out/models/smollm2-135m

  # tiny random model with a real tokenizer, also saved as model.safetensors
  toolrl model build --random --shape tiny --seed 7 --tokenizer ./tokenizer.json --safetensors --out /tmp/tiny

  # an int8 actor's copy of a policy (MatMulNBits, activations int8 per block)
  toolrl model build --from-safetensors ./policy --quantize int8 --accuracy-level 4 --out ./policy-int8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runModelBuild(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.FromSafetensors, "from-safetensors", "", "checkpoint `DIR` with config.json and model.safetensors or a sharded index")
	fl.BoolVar(&f.Random, "random", false, "use seeded random weights of --shape")
	fl.StringVar(&f.Shape, "shape", "", "architecture for --random: "+strings.Join(llama.ShapeNames(), "|"))
	fl.Uint64Var(&f.Seed, "seed", 1, "random seed for --random")
	fl.StringVar(&f.Out, "out", "", "output folder `DIR` (created; existing files are overwritten)")
	fl.StringVar(&f.Tokenizer, "tokenizer", "", "tokenizer.json `FILE` to ship with the model")
	fl.StringVar(&f.External, "external-data", "auto", "weights in onnx/model.onnx_data: auto (past 2 GB), always, never")
	fl.BoolVar(&f.Safetensors, "safetensors", false, "also write model.safetensors")
	fl.StringVar(&f.DType, "dtype", "f32", "dtype of model.safetensors: f32|f16|bf16")
	fl.StringVar(&f.MaxShardSize, "max-shard-size", "", "with --safetensors, shard the weights into files of at most `SIZE` (e.g. 500MB, 2GiB) plus model.safetensors.index.json")
	fl.StringVar(&f.ONNXDType, "onnx-dtype", "float32", "ONNX weights, activations and KV cache: float32|float16 (float16: norms, softmax and RoPE in float32, float32 logits)")
	fl.StringVar(&f.Quantize, "quantize", "", "quantize the linear layers: int8|int4 (default float32)")
	fl.IntVar(&f.BlockSize, "block-size", llama.DefaultBlockSize, "input features per quantization scale with --quantize: 16|32|64|128|256")
	fl.IntVar(&f.AccuracyLevel, "accuracy-level", 0, "MatMulNBits accuracy_level with --quantize: 0 (float32 compute) or 4 (int8 activations)")
	fl.BoolVar(&f.QuantizeLMHead, "quantize-lm-head", false, "with --quantize, quantize the LM head too")
	fl.BoolVar(&f.Fused, "fused", false, "write the fused-operator graph (GroupQueryAttention over a preallocated KV buffer, as onnxruntime-genai's builder) instead of optimum's layout")
	return cmd
}

func runModelBuild(cmd *cobra.Command, f llama.BuildFlags) error {
	opts, err := f.Options(cmd.Flags().Changed)
	if err != nil {
		return usageErrorf("model build: %v", err)
	}
	// The live heap is the float32 weights; every transposed or converted
	// tensor is garbage once written. Go's default GOGC=100 lets the heap
	// grow to twice the live size before collecting, which for a build is a
	// second copy of the weights (3.4 GiB peak RSS instead of 2.4 GiB for the
	// Qwen2.5-0.5B shape, docs/models.md); collecting at +10% costs no
	// measurable time, since the weights are pointer-free. GOGC in the
	// environment still wins.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(10))
	}
	start := time.Now()
	progress := llama.NewProgressDisplay(cmd.ErrOrStderr(), "model build")
	opts.Folder.ONNX.Progress = progress.Update
	opts.Note = func(s string) { fmt.Fprintf(cmd.ErrOrStderr(), "model build: %s\n", s) }
	built, err := llama.BuildFolder(f.Out, opts)
	progress.Finish()
	if err != nil {
		return fmt.Errorf("model build: %w", err)
	}
	built.WriteSummary(cmd.OutOrStdout(), time.Since(start), opts.Folder.ONNX.Precision(), procmem.Peak())
	return nil
}
