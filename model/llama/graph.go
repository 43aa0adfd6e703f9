package llama

import (
	"fmt"
	"math"

	"github.com/advancedclimatesystems/gonnx/onnx"
)

// Opset is the ONNX opset version of built graphs (default domain).
const Opset = 17

// irVersion is the ONNX IR version that goes with opset 17.
const irVersion = 8

// initializer is one graph constant whose bytes are produced on demand, so a
// model can be streamed to disk without holding a second copy of its weights.
type initializer struct {
	name  string
	dims  []int64
	dtype onnx.TensorProto_DataType
	f32   func() []float32 // FLOAT data, computed when written
	i64   []int64          // INT64 data
	u8    func() []byte    // UINT8 (or FLOAT16) data, computed when written
}

func (in *initializer) numBytes() int64 {
	n := int64(1)
	for _, d := range in.dims {
		n *= d
	}
	switch in.dtype {
	case onnx.TensorProto_INT64:
		return 8 * n
	case onnx.TensorProto_UINT8:
		return n
	case onnx.TensorProto_FLOAT16:
		return 2 * n // data in u8 (see float16.go)
	}
	return 4 * n
}

// graph collects nodes and initializers while the builder walks the model.
type graph struct {
	nodes  []*onnx.NodeProto
	inits  []*initializer
	consts map[string]string
}

func attrInt(name string, v int64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttributeProto_INT, I: v}
}

func attrInts(name string, v ...int64) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttributeProto_INTS, Ints: v}
}

// op adds a node with one output named out and returns out.
func (g *graph) op(opType, out string, inputs []string, attrs ...*onnx.AttributeProto) string {
	g.nodes = append(g.nodes, &onnx.NodeProto{OpType: opType, Name: out, Input: inputs, Output: []string{out}, Attribute: attrs})
	return out
}

// opN adds a node with several outputs.
func (g *graph) opN(opType, name string, inputs, outputs []string, attrs ...*onnx.AttributeProto) []string {
	g.nodes = append(g.nodes, &onnx.NodeProto{OpType: opType, Name: name, Input: inputs, Output: outputs, Attribute: attrs})
	return outputs
}

// ints returns a shared 1-D INT64 constant (or a scalar when scalar is set).
func (g *graph) ints(scalar bool, vals ...int64) string {
	key := fmt.Sprint("i", scalar, vals)
	if n, ok := g.consts[key]; ok {
		return n
	}
	name := fmt.Sprintf("const_i64_%d", len(g.consts))
	dims := []int64{int64(len(vals))}
	if scalar {
		dims = nil
	}
	g.inits = append(g.inits, &initializer{name: name, dims: dims, dtype: onnx.TensorProto_INT64, i64: vals})
	g.consts[key] = name
	return name
}

// float returns a shared FLOAT scalar constant.
func (g *graph) float(v float32) string {
	key := fmt.Sprint("f", math.Float32bits(v))
	if n, ok := g.consts[key]; ok {
		return n
	}
	name := fmt.Sprintf("const_f32_%d", len(g.consts))
	g.inits = append(g.inits, &initializer{name: name, dtype: onnx.TensorProto_FLOAT, f32: func() []float32 { return []float32{v} }})
	g.consts[key] = name
	return name
}

// weight adds a FLOAT initializer of the given dims whose data comes from fn.
func (g *graph) weight(name string, dims []int64, fn func() []float32) string {
	g.inits = append(g.inits, &initializer{name: name, dims: dims, dtype: onnx.TensorProto_FLOAT, f32: fn})
	return name
}

// bytes adds a UINT8 initializer of the given dims whose data comes from fn.
func (g *graph) bytes(name string, dims []int64, fn func() []byte) string {
	g.inits = append(g.inits, &initializer{name: name, dims: dims, dtype: onnx.TensorProto_UINT8, u8: fn})
	return name
}

// transposeCat returns the [in, sum(out_i)] transpose of the row-wise
// concatenation of PyTorch Linear weights [out_i, in]: the right operand of
// MatMul(x, W) for all of them at once.
func transposeCat(in int, ws ...[]float32) []float32 {
	cols := 0
	for _, w := range ws {
		cols += len(w) / in
	}
	out := make([]float32, in*cols)
	col := 0
	const blk = 64 // cache blocking for the transpose
	for _, w := range ws {
		rows := len(w) / in
		for r0 := 0; r0 < rows; r0 += blk {
			for c0 := 0; c0 < in; c0 += blk {
				for r := r0; r < min(r0+blk, rows); r++ {
					src := w[r*in:]
					for c := c0; c < min(c0+blk, in); c++ {
						out[c*cols+col+r] = src[c]
					}
				}
			}
		}
		col += rows
	}
	return out
}

func concat(xs ...[]float32) []float32 {
	var out []float32
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}

// Graph input and output names (optimum's text-generation-with-past layout).
const (
	InputIDsName      = "input_ids"
	AttentionMaskName = "attention_mask"
	PositionIDsName   = "position_ids"
	LogitsName        = "logits"
)

// PastKeyName and the three below name the per-layer cache tensors.
func PastKeyName(i int) string { return fmt.Sprintf("past_key_values.%d.key", i) }

// PastValueName names layer i's past values input.
func PastValueName(i int) string { return fmt.Sprintf("past_key_values.%d.value", i) }

// PresentKeyName names layer i's present keys output.
func PresentKeyName(i int) string { return fmt.Sprintf("present.%d.key", i) }

// PresentValueName names layer i's present values output.
func PresentValueName(i int) string { return fmt.Sprintf("present.%d.value", i) }

type dim struct {
	param string
	value int64
}

func valueInfo(name string, elem onnx.TensorProto_DataType, dims ...dim) *onnx.ValueInfoProto {
	shape := &onnx.TensorShapeProto{}
	for _, d := range dims {
		if d.param != "" {
			shape.Dim = append(shape.Dim, &onnx.TensorShapeProto_Dimension{Value: &onnx.TensorShapeProto_Dimension_DimParam{DimParam: d.param}})
		} else {
			shape.Dim = append(shape.Dim, &onnx.TensorShapeProto_Dimension{Value: &onnx.TensorShapeProto_Dimension_DimValue{DimValue: d.value}})
		}
	}
	return &onnx.ValueInfoProto{Name: name, Type: &onnx.TypeProto{Value: &onnx.TypeProto_TensorType{
		TensorType: &onnx.TypeProto_Tensor{ElemType: int32(elem), Shape: shape}}}}
}

// buildGraph lays out the whole model, its linear layers quantized as q
// says (float32 MatMul when q is the zero value). Initializer data is not
// computed here.
func buildGraph(cfg Config, w Weights, q Quantization) (*onnx.GraphProto, []*initializer, error) {
	if err := w.Check(cfg); err != nil {
		return nil, nil, err
	}
	if err := q.Validate(); err != nil {
		return nil, nil, err
	}
	g := &graph{consts: map[string]string{}}
	matmul := func(out, x, name string, in int64, ws ...func() []float32) string {
		return g.linear(q, out, x, name, in, ws...)
	}
	H, I := int64(cfg.HiddenSize), int64(cfg.IntermediateSize)
	D, nH, kvH := int64(cfg.HeadDimension()), int64(cfg.NumAttentionHeads), int64(cfg.KVHeads())
	nrep := nH / kvH
	eps := float32(cfg.RMSNormEps)

	batch, seq := dim{param: "batch_size"}, dim{param: "sequence_length"}
	pastSeq, total := dim{param: "past_sequence_length"}, dim{param: "past_sequence_length + sequence_length"}
	gp := &onnx.GraphProto{Name: "toolrl_" + cfg.ModelType}
	declareIO(gp, cfg, batch, seq, pastSeq, total, true)

	// Shapes: B, S, T as 1-element INT64 tensors; P = T - S.
	shB := g.op("Shape", "batch_dim", []string{InputIDsName}, attrInt("start", 0), attrInt("end", 1))
	shS := g.op("Shape", "seq_dim", []string{InputIDsName}, attrInt("start", 1), attrInt("end", 2))
	shT := g.op("Shape", "total_dim", []string{AttentionMaskName}, attrInt("start", 1), attrInt("end", 2))
	shP := g.op("Sub", "past_dim", []string{shT, shS})
	zero, one := g.ints(true, 0), g.ints(true, 1)
	axis0 := g.ints(false, 0)
	sT := g.op("Squeeze", "total_scalar", []string{shT, axis0})
	sP := g.op("Squeeze", "past_scalar", []string{shP, axis0})

	// Additive attention bias [B, 1, nrep*S, T]: query i (absolute index
	// P+i) may read key j when j <= P+i and attention_mask[b, j] == 1.
	qIdx := g.op("Range", "query_index", []string{sP, sT, one})
	kIdx := g.op("Range", "key_index", []string{zero, sT, one})
	causal := g.op("LessOrEqual", "causal", []string{
		g.op("Unsqueeze", "key_index_row", []string{kIdx, axis0}),
		g.op("Unsqueeze", "query_index_col", []string{qIdx, g.ints(false, 1)})})
	padOK := g.op("Unsqueeze", "mask_rows", []string{
		g.op("Cast", "mask_bool", []string{AttentionMaskName}, attrInt("to", int64(onnx.TensorProto_BOOL))),
		g.ints(false, 1)})
	allowed := g.op("And", "allowed", []string{causal, padOK}) // [B, S, T]
	bias := g.op("Where", "bias_bst", []string{allowed, g.float(0), g.float(MaskBias)})
	bias = g.op("Unsqueeze", "bias_b1st", []string{bias, g.ints(false, 1)}) // [B,1,S,T]
	if nrep > 1 {
		// Query rows are ordered (rep, s) inside each kv head; repeat the
		// bias nrep times along the row axis to match.
		b5 := g.op("Unsqueeze", "bias_b11st", []string{bias, g.ints(false, 1)})
		b5 = g.op("Expand", "bias_b1rst", []string{b5, g.ints(false, 1, 1, nrep, 1, 1)})
		shape := g.op("Concat", "bias_shape", []string{shB, g.ints(false, 1, -1), shT}, attrInt("axis", 0))
		bias = g.op("Reshape", "bias", []string{b5, shape})
	}

	// RoPE tables [B, S, 1, D]: cos(pos*f) for both halves, and sin with the
	// first half negated so that rotate_half(x)*sin = cat(x2, x1)*sinSigned.
	fam, err := cfg.Family()
	if err != nil {
		return nil, nil, err
	}
	posF := g.op("Cast", "position_float", []string{PositionIDsName}, attrInt("to", int64(onnx.TensorProto_FLOAT)))
	var invName string
	if fam.Rope.Kind() == RopeDynamic {
		invName = g.dynamicInvFreq(cfg, fam.Rope, posF)
	} else {
		invFreq := InvFreq(cfg)
		invName = g.weight("rope_inv_freq", []int64{D / 2}, func() []float32 { return invFreq })
	}
	freqs := g.op("Mul", "rope_freqs", []string{g.op("Unsqueeze", "position_col", []string{posF, g.ints(false, 2)}), invName})
	cosH := g.op("Cos", "rope_cos_half", []string{freqs})
	sinH := g.op("Sin", "rope_sin_half", []string{freqs})
	if _, scaling := RoPE(cfg, 0); scaling != 1 {
		// yarn's attention factor multiplies cos and sin (transformers'
		// rotary embedding: cos = emb.cos() * attention_scaling).
		sc := g.float(float32(scaling))
		cosH = g.op("Mul", "rope_cos_scaled", []string{cosH, sc})
		sinH = g.op("Mul", "rope_sin_scaled", []string{sinH, sc})
	}
	axis2 := g.ints(false, 2)
	cos := g.op("Unsqueeze", "rope_cos", []string{g.op("Concat", "rope_cos_full", []string{cosH, cosH}, attrInt("axis", -1)), axis2})
	sin := g.op("Unsqueeze", "rope_sin", []string{g.op("Concat", "rope_sin_full", []string{g.op("Neg", "rope_sin_neg", []string{sinH}), sinH}, attrInt("axis", -1)), axis2})
	halves := g.ints(false, D/2, D/2)
	rope := func(x, prefix string) string {
		parts := g.opN("Split", prefix+"_split", []string{x, halves}, []string{prefix + "_x1", prefix + "_x2"}, attrInt("axis", -1))
		swapped := g.op("Concat", prefix+"_swap", []string{parts[1], parts[0]}, attrInt("axis", -1))
		return g.op("Add", prefix+"_rope", []string{
			g.op("Mul", prefix+"_cos", []string{x, cos}),
			g.op("Mul", prefix+"_sin", []string{swapped, sin})})
	}

	// RMSNorm as Pow -> ReduceMean -> Add -> Sqrt -> Div -> Mul, the pattern
	// ORT fuses into SimplifiedLayerNormalization.
	two := g.float(2)
	epsName := g.float(eps)
	rmsNormN := func(x, weightName, prefix string, width int64) string {
		wName := g.weight(weightName, []int64{width}, func() []float32 { return w[weightName].Data })
		sq := g.op("Pow", prefix+"_pow", []string{x, two})
		mean := g.op("ReduceMean", prefix+"_mean", []string{sq}, attrInts("axes", -1), attrInt("keepdims", 1))
		root := g.op("Sqrt", prefix+"_sqrt", []string{g.op("Add", prefix+"_add_eps", []string{mean, epsName})})
		return g.op("Mul", prefix+"_out", []string{g.op("Div", prefix+"_div", []string{x, root}), wName})
	}
	rmsNorm := func(x, weightName, prefix string) string { return rmsNormN(x, weightName, prefix, H) }

	h, headQ := g.embedTokens(cfg, w, q)
	scale := g.float(float32(1 / math.Sqrt(float64(D))))
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("layers.%d", l)
		wt := func(s string) []float32 { return w[layerName(l, s)].Data }
		x := rmsNorm(h, layerName(l, "input_layernorm.weight"), p+"/input_norm")

		// One MatMul for q, k and v, split afterwards.
		qkvCols := (nH + 2*kvH) * D
		qkv := matmul(p+"/qkv", x, layerName(l, "self_attn.qkv_proj.weight"), H,
			func() []float32 { return wt("self_attn.q_proj.weight") },
			func() []float32 { return wt("self_attn.k_proj.weight") },
			func() []float32 { return wt("self_attn.v_proj.weight") })
		if fam.QKVBias {
			bName := g.weight(layerName(l, "self_attn.qkv_proj.bias"), []int64{qkvCols}, func() []float32 {
				return concat(wt("self_attn.q_proj.bias"), wt("self_attn.k_proj.bias"), wt("self_attn.v_proj.bias"))
			})
			qkv = g.op("Add", p+"/qkv_bias", []string{qkv, bName})
		}
		qkvParts := g.opN("Split", p+"/qkv_split", []string{qkv, g.ints(false, nH*D, kvH*D, kvH*D)},
			[]string{p + "/q", p + "/k", p + "/v"}, attrInt("axis", -1))
		q := g.op("Reshape", p+"/q_heads", []string{qkvParts[0], g.ints(false, 0, 0, nH, D)}) // [B,S,nH,D]
		k := g.op("Reshape", p+"/k_heads", []string{qkvParts[1], g.ints(false, 0, 0, kvH, D)})
		v := g.op("Reshape", p+"/v_heads", []string{qkvParts[2], g.ints(false, 0, 0, kvH, D)})
		if fam.QKNorm {
			// Qwen3: RMSNorm over head_dim of each head, before RoPE.
			q = rmsNormN(q, layerName(l, "self_attn.q_norm.weight"), p+"/q_norm", D)
			k = rmsNormN(k, layerName(l, "self_attn.k_norm.weight"), p+"/k_norm", D)
		}
		q = rope(q, p+"/q")
		k = rope(k, p+"/k")
		k = g.op("Transpose", p+"/k_bhsd", []string{k}, attrInts("perm", 0, 2, 1, 3))
		v = g.op("Transpose", p+"/v_bhsd", []string{v}, attrInts("perm", 0, 2, 1, 3))
		presK := g.op("Concat", PresentKeyName(l), []string{PastKeyName(l), k}, attrInt("axis", 2))
		presV := g.op("Concat", PresentValueName(l), []string{PastValueName(l), v}, attrInt("axis", 2))

		// Grouped-query attention without repeating k/v: the nrep query
		// heads of a kv head become nrep*S rows of one matrix product.
		q = g.op("Mul", p+"/q_scaled", []string{q, scale})
		q = g.op("Reshape", p+"/q_groups", []string{q, g.ints(false, 0, 0, kvH, nrep, D)})  // [B,S,kvH,nrep,D]
		q = g.op("Transpose", p+"/q_grouped", []string{q}, attrInts("perm", 0, 2, 3, 1, 4)) // [B,kvH,nrep,S,D]
		q = g.op("Reshape", p+"/q_rows", []string{q, g.ints(false, 0, 0, -1, D)})           // [B,kvH,nrep*S,D]
		kT := g.op("Transpose", p+"/k_t", []string{presK}, attrInts("perm", 0, 1, 3, 2))    // [B,kvH,D,T]
		scores := g.op("Add", p+"/scores", []string{g.op("MatMul", p+"/qk", []string{q, kT}), bias})
		probs := g.op("Softmax", p+"/probs", []string{scores}, attrInt("axis", -1))
		ctx := g.op("MatMul", p+"/ctx", []string{probs, presV})                                 // [B,kvH,nrep*S,D]
		ctx = g.op("Reshape", p+"/ctx_groups", []string{ctx, g.ints(false, 0, 0, nrep, -1, D)}) // [B,kvH,nrep,S,D]
		ctx = g.op("Transpose", p+"/ctx_bs", []string{ctx}, attrInts("perm", 0, 3, 1, 2, 4))    // [B,S,kvH,nrep,D]
		ctx = g.op("Reshape", p+"/ctx_flat", []string{ctx, g.ints(false, 0, 0, -1)})            // [B,S,nH*D]
		attnOut := matmul(p+"/o", ctx, layerName(l, "self_attn.o_proj.weight"), nH*D,
			func() []float32 { return wt("self_attn.o_proj.weight") })
		if fam.OBias {
			bName := g.weight(layerName(l, "self_attn.o_proj.bias"), []int64{H}, func() []float32 { return wt("self_attn.o_proj.bias") })
			attnOut = g.op("Add", p+"/o_bias", []string{attnOut, bName})
		}
		h = g.op("Add", p+"/attn_residual", []string{h, attnOut})

		x = rmsNorm(h, layerName(l, "post_attention_layernorm.weight"), p+"/post_norm")
		guOut := matmul(p+"/gate_up", x, layerName(l, "mlp.gate_up_proj.weight"), H,
			func() []float32 { return wt("mlp.gate_proj.weight") },
			func() []float32 { return wt("mlp.up_proj.weight") })
		gu := g.opN("Split", p+"/gate_up_split", []string{guOut, g.ints(false, I, I)},
			[]string{p + "/gate", p + "/up"}, attrInt("axis", -1))
		silu := g.op("Mul", p+"/silu", []string{gu[0], g.op("Sigmoid", p+"/gate_sigmoid", []string{gu[0]})})
		act := g.op("Mul", p+"/swiglu", []string{silu, gu[1]})
		down := matmul(p+"/down", act, layerName(l, "mlp.down_proj.weight"), I,
			func() []float32 { return wt("mlp.down_proj.weight") })
		h = g.op("Add", p+"/mlp_residual", []string{h, down})
	}
	x := rmsNorm(h, NormName, "final_norm")

	g.lmHead(cfg, w, q, x, shB, shS, headQ)

	gp.Node = g.nodes
	return gp, g.inits, nil
}

// dynamicInvFreq emits dynamic NTK RoPE's inverse frequencies [D/2],
// computed from the positions of the call as transformers' dynamic update
// does: L = max(max(position_ids)+1, max_position_embeddings), theta' =
// theta * (factor*L/max - (factor-1))^(D/(D-2)), f_i = 1/theta'^(2i/D) (see
// DynamicBase). Below max_position_embeddings this is plain RoPE. A KV-cached
// decode step computes L from its own positions, so keys cached earlier keep
// the rotation of their step (see RoPE).
func (g *graph) dynamicInvFreq(cfg Config, rs RopeScaling, posF string) string {
	D := cfg.HeadDimension()
	maxPos := float32(cfg.MaxPositionEmbeddings)
	exps := make([]float32, D/2)
	for i := range exps {
		exps[i] = float32(2*i) / float32(D)
	}
	expName := g.weight("rope_dynamic_exponents", []int64{int64(D / 2)}, func() []float32 { return exps })
	top := g.op("ReduceMax", "rope_dynamic_max_pos", []string{posF}, attrInt("keepdims", 0))
	l := g.op("Max", "rope_dynamic_len", []string{g.op("Add", "rope_dynamic_len_raw", []string{top, g.float(1)}), g.float(maxPos)})
	ratio := g.op("Sub", "rope_dynamic_ratio", []string{
		g.op("Mul", "rope_dynamic_scaled_len", []string{l, g.float(float32(rs.Factor) / maxPos)}),
		g.float(float32(rs.Factor - 1))})
	base := g.op("Mul", "rope_dynamic_base", []string{
		g.float(float32(cfg.Theta())),
		g.op("Pow", "rope_dynamic_growth", []string{ratio, g.float(float32(D) / float32(D-2))})})
	return g.op("Reciprocal", "rope_inv_freq", []string{g.op("Pow", "rope_dynamic_pow", []string{base, expName})})
}

// linear multiplies x by the transpose of the row-wise concatenation of
// PyTorch Linear weights [out_i, in]: a float32 MatMul on their transpose,
// or MatMulNBits on the quantized rows as stored when q is enabled.
func (g *graph) linear(q Quantization, out, x, name string, in int64, ws ...func() []float32) string {
	var cols int64
	for _, wf := range ws {
		cols += int64(len(wf())) / in
	}
	rows := func() [][]float32 {
		parts := make([][]float32, len(ws))
		for i, wf := range ws {
			parts[i] = wf()
		}
		return parts
	}
	if q.Enabled() {
		return g.matMulNBits(out, x, g.nbitsInits(name, cols, in, q, func() []float32 { return concat(rows()...) }))
	}
	wName := g.weight(name+"_t", []int64{in, cols}, func() []float32 { return transposeCat(int(in), rows()...) })
	return g.op("MatMul", out, []string{x, wName})
}

// embedTokens gathers the embedding rows of input_ids ([B, S, H]). With a
// quantized LM head it also returns the head's quantized table, which a
// tied embedding reads too (see Quantization.LMHead).
func (g *graph) embedTokens(cfg Config, w Weights, q Quantization) (string, nbitsWeight) {
	H, V := int64(cfg.HiddenSize), int64(cfg.VocabSize)
	var headQ nbitsWeight
	if q.LMHead {
		headName := LMHeadName
		if cfg.TieWordEmbeddings {
			headName = EmbedName
		}
		headQ = g.nbitsInits("lm_head.weight", V, H, q, func() []float32 { return w[headName].Data })
	}
	switch {
	case q.LMHead && cfg.TieWordEmbeddings && H%int64(q.Block()) == 0:
		return g.gatherBlockQuantized("embed", InputIDsName, headQ), headQ
	case q.LMHead && cfg.TieWordEmbeddings:
		// A partial last block: a float32 table of the dequantized values.
		embedData := func() []float32 {
			return QuantizeBlockwise(w[EmbedName].Data, int(V), int(H), q.Bits, q.Block()).Dequantize()
		}
		return g.op("Gather", "embed", []string{g.weight(EmbedName, []int64{V, H}, embedData), InputIDsName}, attrInt("axis", 0)), headQ
	}
	embedData := func() []float32 { return w[EmbedName].Data }
	return g.op("Gather", "embed", []string{g.weight(EmbedName, []int64{V, H}, embedData), InputIDsName}, attrInt("axis", 0)), headQ
}

// lmHead adds the logits output [B, S, V] of the normed hidden states x,
// given the batch and sequence dims shB and shS (1-element INT64 tensors).
// It is a Gemm(transB=1) on [B*S, H], which reads the [V, H] weight as
// stored, so a tied head shares the embedding instead of a transposed copy;
// or MatMulNBits on headQ when the head is quantized.
func (g *graph) lmHead(cfg Config, w Weights, q Quantization, x, shB, shS string, headQ nbitsWeight) {
	H, V := int64(cfg.HiddenSize), int64(cfg.VocabSize)
	flat := g.op("Reshape", "final_flat", []string{x, g.ints(false, -1, H)})
	var logits2 string
	if q.LMHead {
		logits2 = g.matMulNBits("logits_2d", flat, headQ)
	} else {
		head := EmbedName
		if !cfg.TieWordEmbeddings {
			head = g.weight(LMHeadName, []int64{V, H}, func() []float32 { return w[LMHeadName].Data })
		}
		logits2 = g.op("Gemm", "logits_2d", []string{flat, head}, attrInt("transB", 1))
	}
	outShape := g.op("Concat", "logits_shape", []string{shB, shS, g.ints(false, V)}, attrInt("axis", 0))
	g.op("Reshape", LogitsName, []string{logits2, outShape})
}

// declareIO declares the graph's inputs and outputs in optimum's order:
// input_ids, attention_mask, position_ids (when positionIDs: the fused graph
// has none), past key/value per layer; logits, present key/value per layer.
func declareIO(gp *onnx.GraphProto, cfg Config, batch, seq, pastSeq, total dim, positionIDs bool) {
	V, D, kvH := int64(cfg.VocabSize), int64(cfg.HeadDimension()), int64(cfg.KVHeads())
	gp.Input = append(gp.Input,
		valueInfo(InputIDsName, onnx.TensorProto_INT64, batch, seq),
		valueInfo(AttentionMaskName, onnx.TensorProto_INT64, batch, total))
	if positionIDs {
		gp.Input = append(gp.Input, valueInfo(PositionIDsName, onnx.TensorProto_INT64, batch, seq))
	}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		gp.Input = append(gp.Input,
			valueInfo(PastKeyName(i), onnx.TensorProto_FLOAT, batch, dim{value: kvH}, pastSeq, dim{value: D}),
			valueInfo(PastValueName(i), onnx.TensorProto_FLOAT, batch, dim{value: kvH}, pastSeq, dim{value: D}))
	}
	gp.Output = append(gp.Output, valueInfo(LogitsName, onnx.TensorProto_FLOAT, batch, seq, dim{value: V}))
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		gp.Output = append(gp.Output,
			valueInfo(PresentKeyName(i), onnx.TensorProto_FLOAT, batch, dim{value: kvH}, total, dim{value: D}),
			valueInfo(PresentValueName(i), onnx.TensorProto_FLOAT, batch, dim{value: kvH}, total, dim{value: D}))
	}
}
