package llama

import (
	"fmt"
	"math"

	"github.com/advancedclimatesystems/gonnx/onnx"
)

// The fused graph (toolrl model build --fused) is the layout
// onnxruntime-genai's model builder emits for the CPU execution provider:
// SimplifiedLayerNormalization for the first RMSNorm and
// SkipSimplifiedLayerNormalization (com.microsoft) fusing every residual add
// with the RMSNorm after it, one packed q/k/v MatMul (MatMulNBits when
// quantized) feeding GroupQueryAttention (com.microsoft) with rotary
// embedding from cos/sin caches, and the key/value cache in a preallocated
// buffer that GroupQueryAttention appends to in place.
//
// Its interface: input_ids [B, S] int64; attention_mask [B, T] int64, T the
// longest row's total length, each row's ones first (row b holds
// sum(mask[b]) tokens, cached ones then the S new ones: right padding,
// never a hole); past_key_values.N.key/value [B, kvH, L, D] with L >= T;
// outputs logits [B, S, V] and present.N.key/value [B, kvH, max(L, T), D].
// There is no position_ids input: GroupQueryAttention derives each row's
// positions from its length. Bind each present to its past's buffer and
// decoding writes the new column in place (past_present_share_buffer).
//
// GroupQueryAttention's contract (onnxruntime contrib_ops/cpu/bert,
// group_query_attention_helper.h): a Run with S == T is a first prompt
// (every row starts at position 0, right padded); S == 1 is a decode step
// for every row at position sum(mask[b])-1; S > 1 with past needs B == 1.

// FusedSupported reports why cfg cannot be built as a fused graph, or nil.
// Dynamic NTK RoPE recomputes its frequencies from each call's positions,
// which GroupQueryAttention's fixed cos/sin caches cannot express, and the
// rotary kernel needs head_dim to be a multiple of 16.
func FusedSupported(cfg Config) error {
	fam, err := cfg.Family()
	if err != nil {
		return err
	}
	if fam.Rope.Kind() == RopeDynamic {
		return fmt.Errorf("--fused: %s with rope_scaling %q cannot be fused exactly (GroupQueryAttention's cos/sin caches are fixed; dynamic NTK frequencies depend on each call's positions): build it without --fused", cfg.ModelType, RopeDynamic)
	}
	if D := cfg.HeadDimension(); D%16 != 0 {
		return fmt.Errorf("--fused: %s head_dim %d is not a multiple of 16, which GroupQueryAttention's rotary embedding needs: build it without --fused", cfg.ModelType, D)
	}
	if cfg.NumAttentionHeads%cfg.KVHeads() != 0 {
		return fmt.Errorf("--fused: %s num_attention_heads %d is not a multiple of num_key_value_heads %d", cfg.ModelType, cfg.NumAttentionHeads, cfg.KVHeads())
	}
	return nil
}

func attrFloat(name string, v float32) *onnx.AttributeProto {
	return &onnx.AttributeProto{Name: name, Type: onnx.AttributeProto_FLOAT, F: v}
}

// msOp adds a com.microsoft node with the given outputs ("" for an unused
// optional one).
func (g *graph) msOp(opType, name string, inputs, outputs []string, attrs ...*onnx.AttributeProto) {
	g.nodes = append(g.nodes, &onnx.NodeProto{OpType: opType, Domain: msDomain, Name: name, Input: inputs, Output: outputs, Attribute: attrs})
}

// RopeCaches returns GroupQueryAttention's cos and sin caches [n, D/2]:
// cos(p*f_i) and sin(p*f_i) times the attention scaling for positions
// p < n, the product taken in float32 as the reference forward and
// transformers do.
func RopeCaches(cfg Config, n int) (cos, sin []float32) {
	f64, scaling := RoPE(cfg, 0)
	half := len(f64)
	cos, sin = make([]float32, n*half), make([]float32, n*half)
	for p := 0; p < n; p++ {
		for i, f := range f64 {
			a := float64(float32(p) * float32(f))
			cos[p*half+i] = float32(math.Cos(a)) * float32(scaling)
			sin[p*half+i] = float32(math.Sin(a)) * float32(scaling)
		}
	}
	return cos, sin
}

// buildFusedGraph lays out the fused graph (see the comment above
// FusedSupported), its linear layers quantized as q says.
func buildFusedGraph(cfg Config, w Weights, q Quantization) (*onnx.GraphProto, []*initializer, error) {
	if err := w.Check(cfg); err != nil {
		return nil, nil, err
	}
	if err := q.Validate(); err != nil {
		return nil, nil, err
	}
	if err := FusedSupported(cfg); err != nil {
		return nil, nil, err
	}
	fam, err := cfg.Family()
	if err != nil {
		return nil, nil, err
	}
	g := &graph{consts: map[string]string{}}
	H, I := int64(cfg.HiddenSize), int64(cfg.IntermediateSize)
	D, nH, kvH := int64(cfg.HeadDimension()), int64(cfg.NumAttentionHeads), int64(cfg.KVHeads())
	eps := float32(cfg.RMSNormEps)

	batch, seq := dim{param: "batch_size"}, dim{param: "sequence_length"}
	pastSeq, total := dim{param: "past_sequence_length"}, dim{param: "total_sequence_length"}
	gp := &onnx.GraphProto{Name: "toolrl_fused_" + cfg.ModelType}
	declareIO(gp, cfg, batch, seq, pastSeq, total, false)

	// seqlens_k = sum(mask) - 1 per row (int32 [B]), total_sequence_length
	// = the mask's width (int32 scalar), as onnxruntime-genai computes them.
	shB := g.op("Shape", "batch_dim", []string{InputIDsName}, attrInt("start", 0), attrInt("end", 1))
	shS := g.op("Shape", "seq_dim", []string{InputIDsName}, attrInt("start", 1), attrInt("end", 2))
	rowLen := g.op("ReduceSum", "mask_row_len", []string{AttentionMaskName, g.ints(false, 1)}, attrInt("keepdims", 0))
	seqlensK := g.op("Cast", "seqlens_k", []string{g.op("Sub", "seqlens_k_i64", []string{rowLen, g.ints(true, 1)})},
		attrInt("to", int64(onnx.TensorProto_INT32)))
	shT := g.op("Shape", "total_dim", []string{AttentionMaskName}, attrInt("start", 1), attrInt("end", 2))
	totalLen := g.op("Cast", "total_seq_len", []string{g.op("Squeeze", "total_scalar", []string{shT, g.ints(false, 0)})},
		attrInt("to", int64(onnx.TensorProto_INT32)))
	maxPos := cfg.MaxPositionEmbeddings
	if maxPos <= 0 {
		maxPos = 4096
	}
	cacheData := func(sin bool) func() []float32 {
		return func() []float32 {
			c, s := RopeCaches(cfg, maxPos)
			if sin {
				return s
			}
			return c
		}
	}
	cosCache := g.weight("cos_cache", []int64{int64(maxPos), D / 2}, cacheData(false))
	sinCache := g.weight("sin_cache", []int64{int64(maxPos), D / 2}, cacheData(true))

	norm := func(name string, width int64) string {
		return g.weight(name, []int64{width}, func() []float32 { return w[name].Data })
	}
	// simplifiedNorm is RMSNorm over the last axis (ONNX Runtime's
	// SimplifiedLayerNormalization, which it registers in the ONNX domain).
	simplifiedNorm := func(out, x, weightName string, width int64) string {
		return g.op("SimplifiedLayerNormalization", out, []string{x, norm(weightName, width)},
			attrInt("axis", -1), attrFloat("epsilon", eps), attrInt("stash_type", 1))
	}
	// skipNorm returns RMSNorm(x + residual) and the sum, the next residual.
	skipNorm := func(prefix, x, residual, weightName string) (normed, sum string) {
		normed, sum = prefix+"_out", prefix+"_sum"
		g.msOp("SkipSimplifiedLayerNormalization", prefix, []string{x, residual, norm(weightName, H)},
			[]string{normed, "", "", sum}, attrFloat("epsilon", eps))
		return normed, sum
	}

	h, headQ := g.embedTokens(cfg, w, q)
	x := simplifiedNorm("layers.0/input_norm", h, layerName(0, "input_layernorm.weight"), H)
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("layers.%d", l)
		wt := func(s string) []float32 { return w[layerName(l, s)].Data }
		qkvCols := (nH + 2*kvH) * D
		qkv := g.linear(q, p+"/qkv", x, layerName(l, "self_attn.qkv_proj.weight"), H,
			func() []float32 { return wt("self_attn.q_proj.weight") },
			func() []float32 { return wt("self_attn.k_proj.weight") },
			func() []float32 { return wt("self_attn.v_proj.weight") })
		if fam.QKVBias {
			bName := g.weight(layerName(l, "self_attn.qkv_proj.bias"), []int64{qkvCols}, func() []float32 {
				return concat(wt("self_attn.q_proj.bias"), wt("self_attn.k_proj.bias"), wt("self_attn.v_proj.bias"))
			})
			qkv = g.op("Add", p+"/qkv_bias", []string{qkv, bName})
		}
		// Packed q/k/v, unless Qwen3's per-head RMSNorm must run between
		// the projection and the rotary embedding.
		gqaIn := []string{qkv, "", ""}
		if fam.QKNorm {
			parts := g.opN("Split", p+"/qkv_split", []string{qkv, g.ints(false, nH*D, kvH*D, kvH*D)},
				[]string{p + "/q", p + "/k", p + "/v"}, attrInt("axis", -1))
			headNorm := func(x, what string, heads int64) string {
				xh := g.op("Reshape", p+"/"+what+"_heads", []string{x, g.ints(false, 0, 0, heads, D)})
				xn := simplifiedNorm(p+"/"+what+"_norm", xh, layerName(l, "self_attn."+what+"_norm.weight"), D)
				return g.op("Reshape", p+"/"+what+"_normed", []string{xn, g.ints(false, 0, 0, heads*D)})
			}
			gqaIn = []string{headNorm(parts[0], "q", nH), headNorm(parts[1], "k", kvH), parts[2]}
		}
		attn := p + "/attn"
		g.msOp("GroupQueryAttention", p+"/gqa",
			append(gqaIn, PastKeyName(l), PastValueName(l), seqlensK, totalLen, cosCache, sinCache),
			[]string{attn, PresentKeyName(l), PresentValueName(l)},
			attrInt("num_heads", nH), attrInt("kv_num_heads", kvH), attrFloat("scale", float32(1/math.Sqrt(float64(D)))),
			attrInt("do_rotary", 1), attrInt("rotary_interleaved", 0))
		attnOut := g.linear(q, p+"/o", attn, layerName(l, "self_attn.o_proj.weight"), nH*D,
			func() []float32 { return wt("self_attn.o_proj.weight") })
		if fam.OBias {
			bName := g.weight(layerName(l, "self_attn.o_proj.bias"), []int64{H}, func() []float32 { return wt("self_attn.o_proj.bias") })
			attnOut = g.op("Add", p+"/o_bias", []string{attnOut, bName})
		}
		x, h = skipNorm(p+"/post_norm", attnOut, h, layerName(l, "post_attention_layernorm.weight"))

		guOut := g.linear(q, p+"/gate_up", x, layerName(l, "mlp.gate_up_proj.weight"), H,
			func() []float32 { return wt("mlp.gate_proj.weight") },
			func() []float32 { return wt("mlp.up_proj.weight") })
		gu := g.opN("Split", p+"/gate_up_split", []string{guOut, g.ints(false, I, I)},
			[]string{p + "/gate", p + "/up"}, attrInt("axis", -1))
		silu := g.op("Mul", p+"/silu", []string{gu[0], g.op("Sigmoid", p+"/gate_sigmoid", []string{gu[0]})})
		act := g.op("Mul", p+"/swiglu", []string{silu, gu[1]})
		down := g.linear(q, p+"/down", act, layerName(l, "mlp.down_proj.weight"), I,
			func() []float32 { return wt("mlp.down_proj.weight") })
		next := NormName
		if l+1 < cfg.NumHiddenLayers {
			next = layerName(l+1, "input_layernorm.weight")
		}
		x, h = skipNorm(p+"/mlp_norm", down, h, next)
	}
	g.lmHead(cfg, w, q, x, shB, shS, headQ)
	gp.Node = g.nodes
	return gp, g.inits, nil
}
