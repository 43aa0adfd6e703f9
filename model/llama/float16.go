package llama

import (
	"fmt"

	"github.com/advancedclimatesystems/gonnx/onnx"

	"github.com/toolrl/toolrl/model/safetensors"
)

// A float16 graph is the float32 graph of buildGraph rewritten: weights,
// activations and the key/value cache in float16, with the parts that
// transformers itself runs in float32 kept in float32, so that a float16
// ONNX model computes what a float16 PyTorch model computes:
//
//   - RMSNorm: LlamaRMSNorm / Qwen2RMSNorm cast the hidden state to float32
//     for the variance and the division, cast back, then multiply by the
//     float16 weight (modeling_llama.py). Squares of residual activations in
//     the hundreds overflow float16 (max 65504) otherwise. Here the weight
//     multiply runs in float32 too (the norm weights stay float32) and the
//     result is rounded once, where a MatMul reads it: one rounding fewer
//     than transformers.
//   - Softmax and the attention bias: eager_attention_forward adds the mask
//     and runs softmax in float32, then casts the probabilities back. The
//     bias (MaskBias, -1e9) is not representable in float16.
//   - RoPE tables: LlamaRotaryEmbedding computes position * inv_freq, cos
//     and sin in float32 (autocast disabled) and casts cos and sin to the
//     model's dtype. Positions past 2048 are not even integers in float16.
//
// The logits output stays float32 (a Cast after the float16 LM head), so
// that consumers read one type whatever the graph computes in; past and
// present key/value tensors are float16, which the actor reads.
//
// The rewrite is by data flow, not by node names, so that it follows what
// graph.go builds: a node runs in float32 when its operator is one of
// float32Ops, when it is an elementwise producer whose every consumer is a
// Softmax (the score + bias Add), when it converts integers to float (Cast
// to FLOAT), or when every float input it reads is a float32 value or a
// constant (the rest of the RoPE table and bias chains). The weight readers
// (float16Ops) and every other node run in float16. Casts are inserted where
// a value crosses between the two.

// float32Ops compute in float32 in a float16 graph (see above).
var float32Ops = map[string]bool{"Pow": true, "ReduceMean": true, "Sqrt": true, "Div": true, "Softmax": true, "Cos": true, "Sin": true}

// float16Ops read weights and always compute in float16.
var float16Ops = map[string]bool{"MatMul": true, "Gemm": true, "Gather": true, "MatMulNBits": true, "GatherBlockQuantized": true}

// smallConstant is the most elements an initializer read by both float32
// and float16 nodes may have to stay float32 (cast for its float16 readers,
// which ORT folds at load); larger ones are stored in float16.
const smallConstant = 1024

// castToFloat16 rewrites the float32 graph gp with initializers inits into
// the float16 graph described above. It changes gp and the initializers in
// place and returns the initializers of the rewritten graph.
func castToFloat16(gp *onnx.GraphProto, inits []*initializer) ([]*initializer, error) {
	const (
		f32 = onnx.TensorProto_FLOAT
		f16 = onnx.TensorProto_FLOAT16
	)
	// Element types of every value of the float32 graph.
	typ := map[string]onnx.TensorProto_DataType{}
	isInit := map[string]*initializer{}
	for _, in := range gp.Input {
		typ[in.Name] = onnx.TensorProto_DataType(in.Type.GetTensorType().GetElemType())
	}
	for _, in := range inits {
		typ[in.name] = in.dtype
		isInit[in.name] = in
	}
	consumers := map[string][]*onnx.NodeProto{}
	for _, n := range gp.Node {
		t, err := outputType(n, typ)
		if err != nil {
			return nil, err
		}
		for _, o := range n.Output {
			typ[o] = t
		}
		for _, x := range n.Input {
			consumers[x] = append(consumers[x], n)
		}
	}

	// Precision of each float value after the rewrite (initializers are
	// decided from their readers below). Graph inputs of float type are the
	// key/value cache: float16.
	prec := map[string]onnx.TensorProto_DataType{}
	for _, in := range gp.Input {
		if typ[in.Name] == f32 {
			prec[in.Name] = f16
			in.Type.GetTensorType().ElemType = int32(f16)
		}
	}
	nodePrec := map[*onnx.NodeProto]onnx.TensorProto_DataType{}
	for _, n := range gp.Node {
		p := f16
		switch {
		case float16Ops[n.OpType]:
		case float32Ops[n.OpType], onlyFeedsSoftmax(n, consumers):
			p = f32
		case n.OpType == "Cast":
			if to := castTo(n); to == f32 {
				p = f32
			} else if to == f16 {
				return nil, fmt.Errorf("float16: node %s already casts to float16", n.Name)
			}
		default:
			// float32 when every float input that is not a constant is a
			// float32 value, and every input is float or a constant.
			p = f32
			for _, x := range n.Input {
				if x == "" || typ[x] != f32 || isInit[x] != nil {
					continue
				}
				if prec[x] != f32 {
					p = f16
				}
			}
		}
		nodePrec[n] = p
		for _, o := range n.Output {
			if typ[o] == f32 {
				prec[o] = p
			}
		}
	}

	// Initializers: float16 when a float16 node reads them, unless they are
	// small constants that float32 nodes read too.
	for _, in := range inits {
		if in.dtype != f32 {
			continue
		}
		var any16, any32 bool
		for _, n := range consumers[in.name] {
			if nodePrec[n] == f16 {
				any16 = true
			} else {
				any32 = true
			}
		}
		small := numelOf(in.dims) <= smallConstant
		if any16 && !(any32 && small) {
			prec[in.name] = f16
			src := in.f32
			in.dtype, in.f32 = f16, nil
			in.u8 = func() []byte { return float16Bytes(src()) }
		} else {
			prec[in.name] = f32
		}
	}

	// Insert casts where a node reads a float value of the other precision.
	var nodes []*onnx.NodeProto
	casts := map[string]string{}
	castOf := func(x string, to onnx.TensorProto_DataType) string {
		key := fmt.Sprint(x, "|", to)
		if c, ok := casts[key]; ok {
			return c
		}
		name := x + "_to_f16"
		if to == f32 {
			name = x + "_to_f32"
		}
		nodes = append(nodes, &onnx.NodeProto{OpType: "Cast", Name: name, Input: []string{x}, Output: []string{name}, Attribute: []*onnx.AttributeProto{attrInt("to", int64(to))}})
		casts[key] = name
		return name
	}
	for _, n := range gp.Node {
		want := nodePrec[n]
		for i, x := range n.Input {
			if x == "" || typ[x] != f32 {
				continue
			}
			if n.OpType == "Cast" {
				continue // Cast accepts either precision
			}
			if prec[x] != want {
				n.Input[i] = castOf(x, want)
			}
		}
		nodes = append(nodes, n)
	}

	// Outputs: the cache in float16, the logits as float32.
	for _, out := range gp.Output {
		tt := out.Type.GetTensorType()
		if onnx.TensorProto_DataType(tt.GetElemType()) != f32 {
			continue
		}
		if out.Name != LogitsName {
			if prec[out.Name] != f16 {
				return nil, fmt.Errorf("float16: output %s is computed in float32", out.Name)
			}
			tt.ElemType = int32(f16)
			continue
		}
		if prec[out.Name] == f32 {
			continue
		}
		inner := out.Name + "_f16"
		for _, n := range nodes {
			for i, o := range n.Output {
				if o == out.Name {
					n.Output[i] = inner
					if n.Name == out.Name {
						n.Name = inner // node names are unique too
					}
				}
			}
		}
		nodes = append(nodes, &onnx.NodeProto{OpType: "Cast", Name: out.Name, Input: []string{inner}, Output: []string{out.Name}, Attribute: []*onnx.AttributeProto{attrInt("to", int64(f32))}})
	}
	gp.Node = nodes
	return inits, nil
}

// outputType is the element type of n's outputs in the float32 graph, from
// its inputs' types (the operators buildGraph uses; others take their first
// input's type).
func outputType(n *onnx.NodeProto, typ map[string]onnx.TensorProto_DataType) (onnx.TensorProto_DataType, error) {
	in := func(i int) (onnx.TensorProto_DataType, error) {
		if i >= len(n.Input) {
			return 0, fmt.Errorf("float16: node %s (%s) has no input %d", n.Name, n.OpType, i)
		}
		t, ok := typ[n.Input[i]]
		if !ok {
			return 0, fmt.Errorf("float16: node %s (%s) reads %s before it is computed", n.Name, n.OpType, n.Input[i])
		}
		return t, nil
	}
	switch n.OpType {
	case "Shape":
		return onnx.TensorProto_INT64, nil
	case "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Not":
		return onnx.TensorProto_BOOL, nil
	case "Cast":
		return castTo(n), nil
	case "Where":
		return in(1)
	case "GatherBlockQuantized":
		return in(2) // the scales' type
	}
	return in(0)
}

// castTo is a Cast node's target type.
func castTo(n *onnx.NodeProto) onnx.TensorProto_DataType {
	for _, a := range n.Attribute {
		if a.Name == "to" {
			return onnx.TensorProto_DataType(a.I)
		}
	}
	return onnx.TensorProto_UNDEFINED
}

// onlyFeedsSoftmax reports whether n is an elementwise op whose outputs are
// read by Softmax nodes only (the scores + mask bias of attention).
func onlyFeedsSoftmax(n *onnx.NodeProto, consumers map[string][]*onnx.NodeProto) bool {
	if n.OpType != "Add" && n.OpType != "Mul" && n.OpType != "Sub" {
		return false
	}
	for _, o := range n.Output {
		cs := consumers[o]
		if len(cs) == 0 {
			return false
		}
		for _, c := range cs {
			if c.OpType != "Softmax" {
				return false
			}
		}
	}
	return true
}

func numelOf(dims []int64) int64 {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	return n
}

// float16Bytes converts x to little-endian IEEE half precision (round to
// nearest even, as torch's .half()).
func float16Bytes(x []float32) []byte {
	out := make([]byte, 2*len(x))
	for i, v := range x {
		h := safetensors.F32ToF16(v)
		out[2*i], out[2*i+1] = byte(h), byte(h>>8)
	}
	return out
}
