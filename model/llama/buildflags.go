package llama

import (
	"fmt"
	"strings"

	"github.com/toolrl/toolrl/internal/bytesize"
	"github.com/toolrl/toolrl/internal/samefile"
	"github.com/toolrl/toolrl/model/safetensors"
)

// BuildFlags are the flags of toolrl model build as typed, before they are
// checked: Options turns them into the folder and options BuildFolder takes.
type BuildFlags struct {
	FromSafetensors string // --from-safetensors DIR
	Random          bool   // --random
	Shape           string // --shape NAME (with --random)
	Seed            uint64 // --seed
	Out             string // --out DIR
	Tokenizer       string // --tokenizer FILE
	External        string // --external-data auto|always|never
	Safetensors     bool   // --safetensors
	DType           string // --dtype f32|f16|bf16 of model.safetensors
	MaxShardSize    string // --max-shard-size SIZE (e.g. 500MB, 2GiB)
	ONNXDType       string // --onnx-dtype float32|float16
	Quantize        string // --quantize int8|int4 ("": float32)
	BlockSize       int    // --block-size
	AccuracyLevel   int    // --accuracy-level
	QuantizeLMHead  bool   // --quantize-lm-head
	Fused           bool   // --fused
}

// Options checks f and returns the options of BuildFolder(f.Out, ...)
// (Folder.ONNX.Progress and Note left for the caller). changed reports
// whether a flag was given (pflag's Changed): --dtype, --block-size,
// --accuracy-level and --quantize-lm-head given alone are refused. The
// first error found is returned, naming its flag, in the order the flags
// depend on each other.
func (f BuildFlags) Options(changed func(flag string) bool) (BuildFolderOptions, error) {
	var o BuildFolderOptions
	if f.Out == "" {
		return o, fmt.Errorf("--out is required")
	}
	if (f.FromSafetensors == "") == !f.Random {
		return o, fmt.Errorf("give exactly one of --from-safetensors DIR and --random")
	}
	if f.Random && f.Shape == "" {
		return o, fmt.Errorf("--random needs --shape (%s)", strings.Join(ShapeNames(), "|"))
	}
	if !f.Random && f.Shape != "" {
		return o, fmt.Errorf("--shape applies to --random only")
	}
	// Writing into the checkpoint folder would replace its config.json (and,
	// with --safetensors, its weights, perhaps in another dtype) while they
	// are read.
	if err := samefile.Refuse(samefile.Path{Flag: "--out", Path: f.Out}, samefile.Path{Flag: "--from-safetensors", Path: f.FromSafetensors}); err != nil {
		return o, err
	}
	ext, ok := map[string]ExternalMode{"auto": ExternalAuto, "always": ExternalAlways, "never": ExternalNever}[f.External]
	if !ok {
		return o, fmt.Errorf("--external-data %q: want auto, always or never", f.External)
	}
	dtype, ok := map[string]safetensors.DType{"f32": safetensors.F32, "f16": safetensors.F16, "bf16": safetensors.BF16}[f.DType]
	if !ok {
		return o, fmt.Errorf("--dtype %q: want f32, f16 or bf16", f.DType)
	}
	quant, err := f.quantization(changed)
	if err != nil {
		return o, err
	}
	var half bool
	switch f.ONNXDType {
	case "float32", "fp32":
	case "float16", "fp16":
		half = true
		if quant.Enabled() {
			return o, fmt.Errorf("--onnx-dtype float16 with --quantize %s is not supported (quantized graphs compute in float32)", f.Quantize)
		}
		if f.Fused {
			return o, fmt.Errorf("--fused with --onnx-dtype float16 is not supported (the fused graph is float32 or --quantize)")
		}
	default:
		return o, fmt.Errorf("--onnx-dtype %q: want float32 or float16", f.ONNXDType)
	}
	var shardBytes int64
	if f.MaxShardSize != "" {
		if !f.Safetensors {
			return o, fmt.Errorf("--max-shard-size applies to --safetensors only")
		}
		if shardBytes, err = bytesize.Parse(f.MaxShardSize); err != nil {
			return o, fmt.Errorf("--max-shard-size %q: %v", f.MaxShardSize, err)
		}
	}
	if changed("dtype") && !f.Safetensors {
		return o, fmt.Errorf("--dtype is the dtype of model.safetensors and applies to --safetensors only (the ONNX graph's is --onnx-dtype)")
	}
	if f.Random {
		cfg, err := ShapeConfig(f.Shape)
		if err != nil {
			return o, err
		}
		if f.Fused {
			// A checkpoint's config is checked when it is read (BuildFolder).
			if err := FusedSupported(cfg); err != nil {
				return o, err
			}
		}
	}
	return BuildFolderOptions{FromSafetensors: f.FromSafetensors, Shape: f.Shape, Seed: f.Seed, Tokenizer: f.Tokenizer,
		Folder: FolderSpec{ONNX: ONNXOptions{External: ext, Quantize: quant, Float16: half, Fused: f.Fused},
			Safetensors: f.Safetensors, SafetensorsDType: dtype, SafetensorsShardBytes: shardBytes}}, nil
}

// quantization reads --quantize and the flags that refine it, refusing them
// without --quantize.
func (f BuildFlags) quantization(changed func(string) bool) (Quantization, error) {
	var q Quantization
	switch f.Quantize {
	case "":
		for _, name := range []string{"block-size", "accuracy-level", "quantize-lm-head"} {
			if changed(name) {
				return q, fmt.Errorf("--%s applies to --quantize only", name)
			}
		}
		return q, nil
	case "int8":
		q.Bits = 8
	case "int4":
		q.Bits = 4
	default:
		return q, fmt.Errorf("--quantize %q: want int8 or int4", f.Quantize)
	}
	q.BlockSize, q.AccuracyLevel, q.LMHead = f.BlockSize, f.AccuracyLevel, f.QuantizeLMHead
	switch q.BlockSize {
	case 16, 32, 64, 128, 256:
	default:
		return q, fmt.Errorf("--block-size %d: want 16, 32, 64, 128 or 256", f.BlockSize)
	}
	if q.AccuracyLevel != 0 && q.AccuracyLevel != 4 {
		return q, fmt.Errorf("--accuracy-level %d: want 0 or 4", f.AccuracyLevel)
	}
	return q, nil
}
