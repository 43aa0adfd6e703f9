package llama

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// MaskBias is the additive bias of a masked attention score, in the graph
// and in the reference. It is finite, unlike -inf, so a row whose keys are
// all masked (a left-padding position) yields finite values instead of NaN.
const MaskBias float32 = -1e9

// Reference runs the architecture in pure Go, with the same math and the same
// inputs and outputs as the ONNX graph. It is safe for concurrent use: all
// state lives in the KV caches the caller passes in.
type Reference struct {
	cfg     Config
	fam     Family
	w       Weights
	invFreq []float32 // nil for dynamic RoPE: computed per forward
	scaling float32   // attention scaling of cos and sin (yarn)
}

// NewReference checks w against cfg and returns a reference model that reads
// (never modifies) w.
func NewReference(cfg Config, w Weights) (*Reference, error) {
	if err := w.Check(cfg); err != nil {
		return nil, err
	}
	fam, err := cfg.Family()
	if err != nil {
		return nil, err
	}
	r := &Reference{cfg: cfg, fam: fam, w: w}
	_, scaling := RoPE(cfg, 0)
	r.scaling = float32(scaling)
	if fam.Rope.Kind() != RopeDynamic {
		r.invFreq = InvFreq(cfg)
	}
	return r, nil
}

// Config returns the model's config.
func (r *Reference) Config() Config { return r.cfg }

// InvFreq returns RoPE's inverse frequencies [D/2] as float32, as
// transformers computes them (RoPE at a length within
// max_position_embeddings; plain RoPE: 1 / theta^(2i/D)).
func InvFreq(cfg Config) []float32 {
	f, _ := RoPE(cfg, 0)
	out := make([]float32, len(f))
	for i, v := range f {
		out[i] = float32(v)
	}
	return out
}

// Inputs mirror the graph's inputs for a batch of B rows of S new tokens.
type Inputs struct {
	InputIDs [][]int64 // [B][S]
	// AttentionMask [B][P+S] with 1 for real tokens and 0 for padding; nil
	// means all ones.
	AttentionMask [][]int64
	// PositionIDs [B][S]; nil means PositionIDs(AttentionMask, S), as
	// transformers' generate computes them.
	PositionIDs [][]int64
}

// KVCache holds keys and values in the graph's present layout: per layer a
// [B, kvH, Len, D] row-major array.
type KVCache struct {
	Batch, Len, KVHeads, HeadDim int
	Key, Value                   [][]float32
}

// Output is the result of one forward: logits [B, S, V] and the present
// cache (past plus the new tokens).
type Output struct {
	Batch, Seq, Vocab int
	Logits            []float32
	Present           *KVCache
}

// At returns the logits of row b, new position s (a slice of Logits).
func (o *Output) At(b, s int) []float32 {
	off := (b*o.Seq + s) * o.Vocab
	return o.Logits[off : off+o.Vocab]
}

// PositionIDs derives position ids for the last s columns of a mask the way
// transformers' generate does: cumsum(mask)-1, with 1 where the mask is 0.
func PositionIDs(mask [][]int64, s int) [][]int64 {
	out := make([][]int64, len(mask))
	for b, row := range mask {
		pos := make([]int64, s)
		var sum int64
		for t, m := range row {
			sum += m
			if j := t - (len(row) - s); j >= 0 {
				if m == 0 {
					pos[j] = 1
				} else {
					pos[j] = sum - 1
				}
			}
		}
		out[b] = pos
	}
	return out
}

// Forward runs the model over in, continuing past (nil for an empty cache),
// and returns all logits and the present cache. It does not modify past.
func (r *Reference) Forward(in Inputs, past *KVCache) (*Output, error) {
	cfg := r.cfg
	B := len(in.InputIDs)
	if B == 0 {
		return nil, fmt.Errorf("reference: empty batch")
	}
	S := len(in.InputIDs[0])
	P := 0
	if past != nil {
		P = past.Len
		if past.Batch != B || len(past.Key) != cfg.NumHiddenLayers {
			return nil, fmt.Errorf("reference: past cache has batch %d and %d layers, inputs have batch %d and the model %d layers",
				past.Batch, len(past.Key), B, cfg.NumHiddenLayers)
		}
	}
	T := P + S
	mask := in.AttentionMask
	if mask == nil {
		mask = make([][]int64, B)
		for b := range mask {
			mask[b] = make([]int64, T)
			for t := range mask[b] {
				mask[b][t] = 1
			}
		}
	}
	pos := in.PositionIDs
	if pos == nil {
		pos = PositionIDs(mask, S)
	}
	if len(mask) != B || len(pos) != B {
		return nil, fmt.Errorf("reference: batch sizes differ: input_ids %d, attention_mask %d, position_ids %d", B, len(mask), len(pos))
	}
	for b := 0; b < B; b++ {
		if len(in.InputIDs[b]) != S || len(pos[b]) != S || len(mask[b]) != T {
			return nil, fmt.Errorf("reference: row %d: want %d input ids, %d position ids and %d mask values, got %d, %d, %d",
				b, S, S, T, len(in.InputIDs[b]), len(pos[b]), len(mask[b]))
		}
	}

	H, V, D := cfg.HiddenSize, cfg.VocabSize, cfg.HeadDimension()
	nH, kvH := cfg.NumAttentionHeads, cfg.KVHeads()
	M := B * S
	embed := r.w[EmbedName].Data
	h := make([]float32, M*H)
	for b := 0; b < B; b++ {
		for s, id := range in.InputIDs[b] {
			if id < 0 || int(id) >= V {
				return nil, fmt.Errorf("reference: row %d position %d: token id %d outside vocabulary [0,%d)", b, s, id, V)
			}
			copy(h[(b*S+s)*H:], embed[int(id)*H:int(id+1)*H])
		}
	}
	cos, sin := r.rope(pos, B, S)

	present := &KVCache{Batch: B, Len: T, KVHeads: kvH, HeadDim: D,
		Key: make([][]float32, cfg.NumHiddenLayers), Value: make([][]float32, cfg.NumHiddenLayers)}
	norm := make([]float32, M*H)
	q := make([]float32, M*nH*D)
	k := make([]float32, M*kvH*D)
	v := make([]float32, M*kvH*D)
	attn := make([]float32, M*nH*D)
	tmpH := make([]float32, M*H)
	gate := make([]float32, M*cfg.IntermediateSize)
	up := make([]float32, M*cfg.IntermediateSize)
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		w := func(s string) []float32 { return r.w[layerName(l, s)].Data }
		rmsNorm(norm, h, w("input_layernorm.weight"), H, float32(cfg.RMSNormEps))
		linear(q, norm, w("self_attn.q_proj.weight"), M, H, nH*D)
		linear(k, norm, w("self_attn.k_proj.weight"), M, H, kvH*D)
		linear(v, norm, w("self_attn.v_proj.weight"), M, H, kvH*D)
		if r.fam.QKVBias {
			addBias(q, w("self_attn.q_proj.bias"))
			addBias(k, w("self_attn.k_proj.bias"))
			addBias(v, w("self_attn.v_proj.bias"))
		}
		if r.fam.QKNorm {
			rmsNorm(q, q, w("self_attn.q_norm.weight"), D, float32(cfg.RMSNormEps))
			rmsNorm(k, k, w("self_attn.k_norm.weight"), D, float32(cfg.RMSNormEps))
		}
		applyRope(q, cos, sin, M, nH, D)
		applyRope(k, cos, sin, M, kvH, D)
		var pk, pv []float32
		if past != nil {
			pk, pv = past.Key[l], past.Value[l]
		}
		present.Key[l] = appendCache(pk, k, B, kvH, P, S, D)
		present.Value[l] = appendCache(pv, v, B, kvH, P, S, D)
		r.attention(attn, q, present.Key[l], present.Value[l], mask, B, S, P)
		linear(tmpH, attn, w("self_attn.o_proj.weight"), M, nH*D, H)
		if r.fam.OBias {
			addBias(tmpH, w("self_attn.o_proj.bias"))
		}
		for i := range h {
			h[i] += tmpH[i]
		}
		rmsNorm(norm, h, w("post_attention_layernorm.weight"), H, float32(cfg.RMSNormEps))
		I := cfg.IntermediateSize
		linear(gate, norm, w("mlp.gate_proj.weight"), M, H, I)
		linear(up, norm, w("mlp.up_proj.weight"), M, H, I)
		for i, g := range gate {
			// SiLU(x) = x * sigmoid(x).
			gate[i] = g / (1 + float32(math.Exp(float64(-g)))) * up[i]
		}
		linear(tmpH, gate, w("mlp.down_proj.weight"), M, I, H)
		for i := range h {
			h[i] += tmpH[i]
		}
	}
	rmsNorm(norm, h, r.w[NormName].Data, H, float32(cfg.RMSNormEps))
	logits := make([]float32, M*V)
	linear(logits, norm, r.w.LMHead(cfg).Data, M, H, V)
	return &Output{Batch: B, Seq: S, Vocab: V, Logits: logits, Present: present}, nil
}

// rope returns cos and sin [B*S, D/2] of position * inv_freq, the product
// taken in float32 as transformers does, times the attention scaling.
// Dynamic RoPE takes its frequencies from this call's largest position.
func (r *Reference) rope(pos [][]int64, B, S int) (cos, sin []float32) {
	invFreq := r.invFreq
	if invFreq == nil {
		var top int64
		for _, row := range pos {
			for _, p := range row {
				top = max(top, p)
			}
		}
		f, _ := RoPE(r.cfg, int(top)+1)
		invFreq = make([]float32, len(f))
		for i, v := range f {
			invFreq[i] = float32(v)
		}
	}
	half := len(invFreq)
	cos = make([]float32, B*S*half)
	sin = make([]float32, B*S*half)
	for b := 0; b < B; b++ {
		for s := 0; s < S; s++ {
			p := float32(pos[b][s])
			for i, f := range invFreq {
				a := float64(p * f)
				cos[(b*S+s)*half+i] = float32(math.Cos(a)) * r.scaling
				sin[(b*S+s)*half+i] = float32(math.Sin(a)) * r.scaling
			}
		}
	}
	return cos, sin
}

// applyRope rotates x [M, heads, D] in place: x*cos + rotate_half(x)*sin with
// rotate_half(x) = cat(-x2, x1) (transformers' non-interleaved layout).
func applyRope(x, cos, sin []float32, M, heads, D int) {
	half := D / 2
	for m := 0; m < M; m++ {
		c, s := cos[m*half:(m+1)*half], sin[m*half:(m+1)*half]
		for hd := 0; hd < heads; hd++ {
			row := x[(m*heads+hd)*D : (m*heads+hd+1)*D]
			for i := 0; i < half; i++ {
				x1, x2 := row[i], row[i+half]
				row[i] = x1*c[i] - x2*s[i]
				row[i+half] = x2*c[i] + x1*s[i]
			}
		}
	}
}

// appendCache returns [B, kvH, P+S, D]: past followed by the new rows of x
// [B*S, kvH*D].
func appendCache(past, x []float32, B, kvH, P, S, D int) []float32 {
	T := P + S
	out := make([]float32, B*kvH*T*D)
	for b := 0; b < B; b++ {
		for g := 0; g < kvH; g++ {
			dst := out[(b*kvH+g)*T*D:]
			if P > 0 {
				copy(dst, past[(b*kvH+g)*P*D:(b*kvH+g+1)*P*D])
			}
			for s := 0; s < S; s++ {
				copy(dst[(P+s)*D:(P+s+1)*D], x[((b*S+s)*kvH+g)*D:((b*S+s)*kvH+g+1)*D])
			}
		}
	}
	return out
}

// attention computes softmax(q·kᵀ/√D + bias)·v for every query head, with
// query head h reading kv head h/nrep (transformers' repeat_kv), and writes
// out [B*S, nH*D].
func (r *Reference) attention(out, q, keys, values []float32, mask [][]int64, B, S, P int) {
	D, nH, kvH := r.cfg.HeadDimension(), r.cfg.NumAttentionHeads, r.cfg.KVHeads()
	nrep := nH / kvH
	T := P + S
	scale := float32(1 / math.Sqrt(float64(D)))
	qb := make([]float32, nrep*S*D)
	scores := make([]float32, nrep*S*T)
	ctx := make([]float32, nrep*S*D)
	for b := 0; b < B; b++ {
		for g := 0; g < kvH; g++ {
			for rep := 0; rep < nrep; rep++ {
				head := g*nrep + rep
				for s := 0; s < S; s++ {
					src := q[((b*S+s)*nH+head)*D : ((b*S+s)*nH+head+1)*D]
					dst := qb[(rep*S+s)*D : (rep*S+s+1)*D]
					for i, x := range src {
						dst[i] = x * scale
					}
				}
			}
			kb := keys[(b*kvH+g)*T*D : (b*kvH+g+1)*T*D]
			vb := values[(b*kvH+g)*T*D : (b*kvH+g+1)*T*D]
			blas32.Gemm(blas.NoTrans, blas.Trans, 1,
				blas32.General{Rows: nrep * S, Cols: D, Stride: D, Data: qb},
				blas32.General{Rows: T, Cols: D, Stride: D, Data: kb},
				0, blas32.General{Rows: nrep * S, Cols: T, Stride: T, Data: scores})
			for rep := 0; rep < nrep; rep++ {
				for s := 0; s < S; s++ {
					row := scores[(rep*S+s)*T : (rep*S+s+1)*T]
					for t := range row {
						if t > P+s || mask[b][t] == 0 {
							row[t] += MaskBias
						}
					}
					softmax(row)
				}
			}
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1,
				blas32.General{Rows: nrep * S, Cols: T, Stride: T, Data: scores},
				blas32.General{Rows: T, Cols: D, Stride: D, Data: vb},
				0, blas32.General{Rows: nrep * S, Cols: D, Stride: D, Data: ctx})
			for rep := 0; rep < nrep; rep++ {
				head := g*nrep + rep
				for s := 0; s < S; s++ {
					copy(out[((b*S+s)*nH+head)*D:((b*S+s)*nH+head+1)*D], ctx[(rep*S+s)*D:(rep*S+s+1)*D])
				}
			}
		}
	}
}

func softmax(row []float32) {
	mx := row[0]
	for _, x := range row[1:] {
		mx = max(mx, x)
	}
	var sum float64
	for i, x := range row {
		e := math.Exp(float64(x - mx))
		row[i] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	for i := range row {
		row[i] *= inv
	}
}

// rmsNorm writes x * rsqrt(mean(x²) + eps) * w for each row of width n.
func rmsNorm(dst, x, w []float32, n int, eps float32) {
	for off := 0; off < len(x); off += n {
		row := x[off : off+n]
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		inv := float32(1 / math.Sqrt(float64(float32(ss/float64(n))+eps)))
		for i, v := range row {
			dst[off+i] = v * inv * w[i]
		}
	}
}

// linear computes dst[M, out] = x[M, in] · W[out, in]ᵀ (PyTorch Linear).
func linear(dst, x, w []float32, M, in, out int) {
	blas32.Gemm(blas.NoTrans, blas.Trans, 1,
		blas32.General{Rows: M, Cols: in, Stride: in, Data: x},
		blas32.General{Rows: out, Cols: in, Stride: in, Data: w},
		0, blas32.General{Rows: M, Cols: out, Stride: out, Data: dst})
}

func addBias(x, bias []float32) {
	n := len(bias)
	for off := 0; off < len(x); off += n {
		for i, b := range bias {
			x[off+i] += b
		}
	}
}
