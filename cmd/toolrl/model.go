package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/internal/bytesize"
	"github.com/toolrl/toolrl/internal/samefile"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/safetensors"
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

type modelBuildFlags struct {
	fromSafetensors string
	random          bool
	shape           string
	seed            uint64
	out             string
	tokenizer       string
	external        string
	safetensors     bool
	dtype           string
	maxShardSize    string
	onnxDType       string
	quantize        string
	blockSize       int
	accuracyLevel   int
	quantizeLMHead  bool
}

func newModelBuildCmd() *cobra.Command {
	var f modelBuildFlags
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
model.safetensors, when written, keeps the full-precision weights.`,
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
	fl.StringVar(&f.fromSafetensors, "from-safetensors", "", "checkpoint `DIR` with config.json and model.safetensors or a sharded index")
	fl.BoolVar(&f.random, "random", false, "use seeded random weights of --shape")
	fl.StringVar(&f.shape, "shape", "", "architecture for --random: "+strings.Join(llama.ShapeNames(), "|"))
	fl.Uint64Var(&f.seed, "seed", 1, "random seed for --random")
	fl.StringVar(&f.out, "out", "", "output folder `DIR` (created; existing files are overwritten)")
	fl.StringVar(&f.tokenizer, "tokenizer", "", "tokenizer.json `FILE` to ship with the model")
	fl.StringVar(&f.external, "external-data", "auto", "weights in onnx/model.onnx_data: auto (past 2 GB), always, never")
	fl.BoolVar(&f.safetensors, "safetensors", false, "also write model.safetensors")
	fl.StringVar(&f.dtype, "dtype", "f32", "dtype of model.safetensors: f32|f16|bf16")
	fl.StringVar(&f.maxShardSize, "max-shard-size", "", "with --safetensors, shard the weights into files of at most `SIZE` (e.g. 500MB, 2GiB) plus model.safetensors.index.json")
	fl.StringVar(&f.onnxDType, "onnx-dtype", "float32", "ONNX weights, activations and KV cache: float32|float16 (float16: norms, softmax and RoPE in float32, float32 logits)")
	fl.StringVar(&f.quantize, "quantize", "", "quantize the linear layers: int8|int4 (default float32)")
	fl.IntVar(&f.blockSize, "block-size", llama.DefaultBlockSize, "input features per quantization scale with --quantize: 16|32|64|128|256")
	fl.IntVar(&f.accuracyLevel, "accuracy-level", 0, "MatMulNBits accuracy_level with --quantize: 0 (float32 compute) or 4 (int8 activations)")
	fl.BoolVar(&f.quantizeLMHead, "quantize-lm-head", false, "with --quantize, quantize the LM head too")
	return cmd
}

func runModelBuild(cmd *cobra.Command, f modelBuildFlags) error {
	if f.out == "" {
		return usageErrorf("model build: --out is required")
	}
	if (f.fromSafetensors == "") == !f.random {
		return usageErrorf("model build: give exactly one of --from-safetensors DIR and --random")
	}
	if f.random && f.shape == "" {
		return usageErrorf("model build: --random needs --shape (%s)", strings.Join(llama.ShapeNames(), "|"))
	}
	if !f.random && f.shape != "" {
		return usageErrorf("model build: --shape applies to --random only")
	}
	// Writing into the checkpoint folder would replace its config.json (and,
	// with --safetensors, its weights, perhaps in another dtype) while they
	// are read.
	if err := samefile.Refuse(samefile.Path{Flag: "--out", Path: f.out}, samefile.Path{Flag: "--from-safetensors", Path: f.fromSafetensors}); err != nil {
		return usageErrorf("model build: %v", err)
	}
	ext, ok := map[string]llama.ExternalMode{"auto": llama.ExternalAuto, "always": llama.ExternalAlways, "never": llama.ExternalNever}[f.external]
	if !ok {
		return usageErrorf("model build: --external-data %q: want auto, always or never", f.external)
	}
	dtype, ok := map[string]safetensors.DType{"f32": safetensors.F32, "f16": safetensors.F16, "bf16": safetensors.BF16}[f.dtype]
	if !ok {
		return usageErrorf("model build: --dtype %q: want f32, f16 or bf16", f.dtype)
	}
	quant, err := modelBuildQuantization(cmd, f)
	if err != nil {
		return err
	}
	var half bool
	switch f.onnxDType {
	case "float32", "fp32":
	case "float16", "fp16":
		half = true
		if quant.Enabled() {
			return usageErrorf("model build: --onnx-dtype float16 with --quantize %s is not supported (quantized graphs compute in float32)", f.quantize)
		}
	default:
		return usageErrorf("model build: --onnx-dtype %q: want float32 or float16", f.onnxDType)
	}
	var shardBytes int64
	if f.maxShardSize != "" {
		if !f.safetensors {
			return usageErrorf("model build: --max-shard-size applies to --safetensors only")
		}
		if shardBytes, err = bytesize.Parse(f.maxShardSize); err != nil {
			return usageErrorf("model build: --max-shard-size %q: %v", f.maxShardSize, err)
		}
	}
	if cmd.Flags().Changed("dtype") && !f.safetensors {
		return usageErrorf("model build: --dtype is the dtype of model.safetensors and applies to --safetensors only (the ONNX graph's is --onnx-dtype)")
	}
	if f.random {
		if _, err := llama.ShapeConfig(f.shape); err != nil {
			return usageErrorf("model build: %v", err)
		}
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
	progress := newBuildProgress(cmd.ErrOrStderr())
	opts := llama.BuildFolderOptions{FromSafetensors: f.fromSafetensors, Shape: f.shape, Seed: f.seed, Tokenizer: f.tokenizer,
		Folder: llama.FolderSpec{ONNX: llama.ONNXOptions{External: ext, Quantize: quant, Float16: half, Progress: progress.update},
			Safetensors: f.safetensors, SafetensorsDType: dtype, SafetensorsShardBytes: shardBytes},
		Note: func(s string) { fmt.Fprintf(cmd.ErrOrStderr(), "model build: %s\n", s) }}
	built, err := llama.BuildFolder(f.out, opts)
	progress.finish()
	if err != nil {
		return fmt.Errorf("model build: %w", err)
	}
	cfg, precision := built.Config, opts.Folder.ONNX.Precision()
	// One summary a person reads: what went in, what came out, what it cost.
	o := cmd.OutOrStdout()
	fmt.Fprintf(o, "wrote %s in %.1fs: %s, %.1fM parameters, %s\n", built.Dir, time.Since(start).Seconds(), cfg.ModelType, float64(cfg.NumParams())/1e6, precision)
	fmt.Fprintf(o, "  architecture  %d layers, hidden %d, %d heads (%d kv, head_dim %d), intermediate %d, vocab %d, %s embeddings\n",
		cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.KVHeads(), cfg.HeadDimension(), cfg.IntermediateSize, cfg.VocabSize,
		map[bool]string{true: "tied", false: "untied"}[cfg.TieWordEmbeddings])
	fmt.Fprintf(o, "  weights in    %s\n", built.Source)
	fmt.Fprintf(o, "  onnx          %s\n", precision)
	fmt.Fprintf(o, "  written       %s in %d files\n", bytesize.Format(built.Bytes()), len(built.Files))
	if rss := peakRSS(); rss > 0 {
		fmt.Fprintf(o, "  peak RSS      %s\n", bytesize.Format(rss))
	}
	for i, name := range built.Files {
		fmt.Fprintf(o, "  %-36s %s\n", name, bytesize.Format(built.Sizes[i]))
	}
	return nil
}

// buildProgress shows model build's read and write steps: a bar of bytes on
// a terminal, otherwise a line at every tenth of a step.
type buildProgress struct {
	out     io.Writer
	bar     *progressbar.ProgressBar
	step    string
	logged  int64 // tenths of the step already reported
	isTerm  bool
	started time.Time
}

func newBuildProgress(out io.Writer) *buildProgress {
	p := &buildProgress{out: out}
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.isTerm = true
		}
	}
	return p
}

func (p *buildProgress) update(pr llama.Progress) {
	if pr.Step != p.step {
		p.finish()
		p.step, p.logged, p.started = pr.Step, 0, time.Now()
		if p.isTerm {
			p.bar = progressbar.NewOptions64(pr.TotalBytes, progressbar.OptionSetWriter(p.out), progressbar.OptionShowBytes(true),
				progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		}
	}
	desc := fmt.Sprintf("%s %d/%d tensors", pr.Step, pr.Tensors, pr.TotalTensors)
	if p.bar != nil {
		p.bar.Describe(desc)
		_ = p.bar.Set64(pr.Bytes)
		return
	}
	if pr.TotalBytes <= 0 {
		return
	}
	if tenth := 10 * pr.Bytes / pr.TotalBytes; tenth > p.logged || pr.Tensors == pr.TotalTensors {
		if tenth <= p.logged && p.logged == 10 {
			return
		}
		p.logged = tenth
		fmt.Fprintf(p.out, "model build: %s, %s of %s (%.1fs)\n", desc, bytesize.Format(pr.Bytes), bytesize.Format(pr.TotalBytes), time.Since(p.started).Seconds())
	}
}

func (p *buildProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}

// modelBuildQuantization reads --quantize and the flags that refine it,
// refusing them without --quantize.
func modelBuildQuantization(cmd *cobra.Command, f modelBuildFlags) (llama.Quantization, error) {
	var q llama.Quantization
	switch f.quantize {
	case "":
		for _, name := range []string{"block-size", "accuracy-level", "quantize-lm-head"} {
			if cmd.Flags().Changed(name) {
				return q, usageErrorf("model build: --%s applies to --quantize only", name)
			}
		}
		return q, nil
	case "int8":
		q.Bits = 8
	case "int4":
		q.Bits = 4
	default:
		return q, usageErrorf("model build: --quantize %q: want int8 or int4", f.quantize)
	}
	q.BlockSize, q.AccuracyLevel, q.LMHead = f.blockSize, f.accuracyLevel, f.quantizeLMHead
	switch q.BlockSize {
	case 16, 32, 64, 128, 256:
	default:
		return q, usageErrorf("model build: --block-size %d: want 16, 32, 64, 128 or 256", f.blockSize)
	}
	if q.AccuracyLevel != 0 && q.AccuracyLevel != 4 {
		return q, usageErrorf("model build: --accuracy-level %d: want 0 or 4", f.accuracyLevel)
	}
	return q, nil
}
