package llama

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/advancedclimatesystems/gonnx/onnx"
)

// Quantization selects weight-only block quantization of the linear layers,
// written as ONNX Runtime's MatMulNBits (com.microsoft domain). The zero value
// is no quantization: a float32 graph.
//
// The scheme is asymmetric with zero points, onnxruntime's quantizer default
// (matmul_nbits_quantizer with is_symmetric=False): each block of BlockSize
// consecutive input features of one output row has its own float32 scale and
// unsigned zero point, with the block's range widened to include 0:
//
//	lo, hi = min(0, min(x)), max(0, max(x))
//	scale  = (hi - lo) / (2^bits - 1)
//	zp     = clamp(round(-lo / scale), 0, 2^bits - 1)
//	q      = clamp(round(x / scale) + zp, 0, 2^bits - 1)
//	x'     = (q - zp) * scale                  (what the runtime computes with)
//
// Dequantize applies the last line; the Go reference runs on DequantizedWeights
// so that it computes with exactly the values the graph holds.
type Quantization struct {
	// Bits is 0 (float32), 4 or 8.
	Bits int `json:"bits"`
	// BlockSize is the number of input features sharing one scale: 16, 32,
	// 64, 128 or 256; 0 means DefaultBlockSize.
	BlockSize int `json:"block_size"`
	// AccuracyLevel is MatMulNBits' accuracy_level: 0 computes in float32
	// with dequantized weights; 4 quantizes activations to int8 per block
	// (faster on CPU, a further small error the reference does not model).
	AccuracyLevel int `json:"accuracy_level"`
	// LMHead also quantizes the LM head. With tied embeddings the embedding
	// lookup reads the same quantized table (GatherBlockQuantized over the
	// head's MatMulNBits bytes) when the hidden size is a whole number of
	// blocks; otherwise the embedding is a float32 table of the dequantized
	// values. Either way embedding and head use the same values.
	LMHead bool `json:"lm_head,omitempty"`
}

// DefaultBlockSize is the block size of a Quantization with BlockSize 0.
const DefaultBlockSize = 32

// QuantizationKey is the config.json field in which a quantized folder
// records its Quantization (a toolrl field: transformers' own
// quantization_config would make its safetensors loader look for a backend).
const QuantizationKey = "toolrl_quantization"

// msDomain is the operator domain of ONNX Runtime's contrib ops.
const msDomain = "com.microsoft"

// Enabled reports whether q quantizes anything.
func (q Quantization) Enabled() bool { return q.Bits != 0 }

// Block returns the effective block size.
func (q Quantization) Block() int {
	if q.BlockSize == 0 {
		return DefaultBlockSize
	}
	return q.BlockSize
}

// Validate checks q's fields (a zero q is valid).
func (q Quantization) Validate() error {
	if !q.Enabled() {
		if q.BlockSize != 0 || q.AccuracyLevel != 0 || q.LMHead {
			return fmt.Errorf("quantization: block size, accuracy level and LM head need bits 4 or 8")
		}
		return nil
	}
	if q.Bits != 4 && q.Bits != 8 {
		return fmt.Errorf("quantization: bits %d: want 4 or 8", q.Bits)
	}
	switch q.Block() {
	case 16, 32, 64, 128, 256:
	default:
		return fmt.Errorf("quantization: block size %d: want 16, 32, 64, 128 or 256", q.BlockSize)
	}
	if q.AccuracyLevel != 0 && q.AccuracyLevel != 4 {
		return fmt.Errorf("quantization: accuracy level %d: want 0 or 4", q.AccuracyLevel)
	}
	return nil
}

// String names q as trajectories record it, e.g. "int8-b32-acc4" or
// "int4-b64-acc0-lmhead"; "" for no quantization (float32).
func (q Quantization) String() string {
	if !q.Enabled() {
		return ""
	}
	s := fmt.Sprintf("int%d-b%d-acc%d", q.Bits, q.Block(), q.AccuracyLevel)
	if q.LMHead {
		s += "-lmhead"
	}
	return s
}

// ParseQuantization reads String's form back ("" is float32).
func ParseQuantization(s string) (Quantization, error) {
	var q Quantization
	if s == "" {
		return q, nil
	}
	rest := strings.TrimSuffix(s, "-lmhead")
	q.LMHead = rest != s
	if _, err := fmt.Sscanf(rest, "int%d-b%d-acc%d", &q.Bits, &q.BlockSize, &q.AccuracyLevel); err != nil {
		return Quantization{}, fmt.Errorf("quantization %q: want int{4,8}-b{block}-acc{0,4}[-lmhead]: %v", s, err)
	}
	if q.String() != s {
		return Quantization{}, fmt.Errorf("quantization %q: not in canonical form (%q)", s, q.String())
	}
	return q, q.Validate()
}

// quantizedLinears are the layer weights a quantized graph stores as
// MatMulNBits ([out, in], quantized along in).
var quantizedLinears = []string{
	"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
	"self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
}

// QuantizedNames returns the names of the tensors q quantizes for cfg.
func (q Quantization) QuantizedNames(cfg Config) []string {
	if !q.Enabled() {
		return nil
	}
	var names []string
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		for _, s := range quantizedLinears {
			names = append(names, layerName(l, s))
		}
	}
	if q.LMHead {
		if cfg.TieWordEmbeddings {
			names = append(names, EmbedName)
		} else {
			names = append(names, LMHeadName)
		}
	}
	return names
}

// DequantizedWeights returns a copy of w in which every tensor q quantizes
// holds its quantize-dequantize round trip: the values a q-quantized graph
// computes with. Other tensors are shared with w, not copied.
func DequantizedWeights(cfg Config, w Weights, q Quantization) (Weights, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := w.Check(cfg); err != nil {
		return nil, err
	}
	out := make(Weights, len(w))
	for n, t := range w {
		out[n] = t
	}
	for _, n := range q.QuantizedNames(cfg) {
		t := w[n]
		qb := QuantizeBlockwise(t.Data, t.Shape[0], t.Shape[1], q.Bits, q.Block())
		out[n] = Tensor{Shape: t.Shape, Data: qb.Dequantize()}
	}
	return out, nil
}

// BlockQuantized is an [N, K] row-major matrix quantized along K in
// MatMulNBits' layout.
type BlockQuantized struct {
	N, K, Bits, BlockSize int
	// Data is [N, KBlocks, BlockSize*Bits/8]; with 4 bits, element 2j of a
	// block is byte j's low nibble and element 2j+1 its high nibble. A
	// partial last block is padded with the zero point (dequantizes to 0).
	Data []byte
	// Scales is [N * KBlocks].
	Scales []float32
	// ZeroPoints is [N * ceil(KBlocks*Bits/8)]: one byte per block with 8
	// bits; with 4 bits two blocks a byte, low nibble first, each row
	// starting on a new byte.
	ZeroPoints []byte
}

// KBlocks is the number of blocks per row.
func (b *BlockQuantized) KBlocks() int { return (b.K + b.BlockSize - 1) / b.BlockSize }

func (b *BlockQuantized) blobSize() int { return b.BlockSize * b.Bits / 8 }

func (b *BlockQuantized) zpRowBytes() int { return (b.KBlocks()*b.Bits + 7) / 8 }

// QuantizeBlockwise quantizes the row-major [n, k] matrix x (a PyTorch Linear
// weight [out, in]) along k with the scheme Quantization documents.
func QuantizeBlockwise(x []float32, n, k, bits, blockSize int) *BlockQuantized {
	b := &BlockQuantized{N: n, K: k, Bits: bits, BlockSize: blockSize}
	kb := b.KBlocks()
	b.Data = make([]byte, n*kb*b.blobSize())
	b.Scales = make([]float32, n*kb)
	b.ZeroPoints = make([]byte, n*b.zpRowBytes())
	qmax := float32(int(1)<<bits - 1)
	vals := make([]uint8, blockSize)
	for r := 0; r < n; r++ {
		row := x[r*k : (r+1)*k]
		for blk := 0; blk < kb; blk++ {
			part := row[blk*blockSize : min((blk+1)*blockSize, k)]
			lo, hi := float32(0), float32(0)
			for _, v := range part {
				lo, hi = min(lo, v), max(hi, v)
			}
			scale := (hi - lo) / qmax
			var zp uint8
			var inv float32
			if scale != 0 {
				inv = 1 / scale
				zp = uint8(clampRound(-lo*inv, qmax))
			}
			for i := range vals {
				vals[i] = zp
			}
			for i, v := range part {
				vals[i] = uint8(clampRound(v*inv+float32(zp), qmax))
			}
			b.Scales[r*kb+blk] = scale
			blob := b.Data[(r*kb+blk)*b.blobSize():]
			if bits == 8 {
				copy(blob, vals)
				b.ZeroPoints[r*kb+blk] = zp
			} else {
				for j := 0; j < blockSize/2; j++ {
					blob[j] = vals[2*j] | vals[2*j+1]<<4
				}
				zb := &b.ZeroPoints[r*b.zpRowBytes()+blk/2]
				*zb |= zp << (4 * (blk % 2))
			}
		}
	}
	return b
}

func clampRound(v, qmax float32) float32 {
	return min(max(float32(math.RoundToEven(float64(v))), 0), qmax)
}

// value returns element (r, c)'s quantized value and zero point.
func (b *BlockQuantized) value(r, c int) (q, zp uint8) {
	kb := b.KBlocks()
	blk := c / b.BlockSize
	i := c % b.BlockSize
	blob := b.Data[(r*kb+blk)*b.blobSize():]
	if b.Bits == 8 {
		return blob[i], b.ZeroPoints[r*kb+blk]
	}
	q = blob[i/2] >> (4 * (i % 2)) & 0xF
	zp = b.ZeroPoints[r*b.zpRowBytes()+blk/2] >> (4 * (blk % 2)) & 0xF
	return q, zp
}

// Dequantize returns the [N, K] float32 matrix the quantized one stands for:
// (q - zp) * scale, computed in float32 as the runtime does.
func (b *BlockQuantized) Dequantize() []float32 {
	out := make([]float32, b.N*b.K)
	kb := b.KBlocks()
	for r := 0; r < b.N; r++ {
		for c := 0; c < b.K; c++ {
			q, zp := b.value(r, c)
			out[r*b.K+c] = float32(int(q)-int(zp)) * b.Scales[r*kb+c/b.BlockSize]
		}
	}
	return out
}

// quantizedWeight is a graph weight quantized once, on first use, for the
// three initializers (data, scales, zero points) that read it.
type quantizedWeight struct {
	once sync.Once
	rows func() []float32 // [N, K] source
	n, k int
	q    Quantization
	b    *BlockQuantized
}

func (qw *quantizedWeight) get() *BlockQuantized {
	qw.once.Do(func() { qw.b = QuantizeBlockwise(qw.rows(), qw.n, qw.k, qw.q.Bits, qw.q.Block()) })
	return qw.b
}

// nbitsWeight names the three initializers of a weight in MatMulNBits'
// layout.
type nbitsWeight struct {
	data, scales, zeroPoints string
	n, k, kBlocks, zpRow     int64
	q                        Quantization
}

// nbitsInits adds the initializers of the [n, k] weight produced by rows,
// quantized once on first write, named after name.
func (g *graph) nbitsInits(name string, n, k int64, q Quantization, rows func() []float32) nbitsWeight {
	qw := &quantizedWeight{rows: rows, n: int(n), k: int(k), q: q}
	kb := (k + int64(q.Block()) - 1) / int64(q.Block())
	blob := int64(q.Block() * q.Bits / 8)
	zpRow := (kb*int64(q.Bits) + 7) / 8
	return nbitsWeight{
		data:       g.bytes(name+"_Q", []int64{n, kb, blob}, func() []byte { return qw.get().Data }),
		scales:     g.weight(name+"_scales", []int64{n * kb}, func() []float32 { return qw.get().Scales }),
		zeroPoints: g.bytes(name+"_zp", []int64{n * zpRow}, func() []byte { return qw.get().ZeroPoints }),
		n:          n, k: k, kBlocks: kb, zpRow: zpRow, q: q,
	}
}

// matMulNBits adds x @ W^T for the quantized weight wq.
func (g *graph) matMulNBits(out, x string, wq nbitsWeight) string {
	q := wq.q
	g.nodes = append(g.nodes, &onnx.NodeProto{OpType: "MatMulNBits", Domain: msDomain, Name: out,
		Input: []string{x, wq.data, wq.scales, wq.zeroPoints}, Output: []string{out},
		Attribute: []*onnx.AttributeProto{attrInt("K", wq.k), attrInt("N", wq.n), attrInt("bits", int64(q.Bits)),
			attrInt("block_size", int64(q.Block())), attrInt("accuracy_level", int64(q.AccuracyLevel))}})
	return out
}

// gatherBlockQuantized adds the rows ids of the quantized table wq
// (GatherBlockQuantized, com.microsoft), dequantized to float32. It reads
// MatMulNBits' bytes through Reshapes ([n, k*bits/8] data, [n, kBlocks]
// scales, [n, zpRow] zero points: uint8 data follows MatMulNBits'
// conventions), so a tied embedding and LM head share one quantized table.
// It needs k to be a whole number of blocks (no padding inside a row).
func (g *graph) gatherBlockQuantized(out, ids string, wq nbitsWeight) string {
	q := wq.q
	data := g.op("Reshape", out+"_data", []string{wq.data, g.ints(false, wq.n, wq.k*int64(q.Bits)/8)})
	scales := g.op("Reshape", out+"_scales", []string{wq.scales, g.ints(false, wq.n, wq.kBlocks)})
	zps := g.op("Reshape", out+"_zp", []string{wq.zeroPoints, g.ints(false, wq.n, wq.zpRow)})
	g.nodes = append(g.nodes, &onnx.NodeProto{OpType: "GatherBlockQuantized", Domain: msDomain, Name: out,
		Input: []string{data, ids, scales, zps}, Output: []string{out},
		Attribute: []*onnx.AttributeProto{attrInt("gather_axis", 0), attrInt("quantize_axis", 1),
			attrInt("block_size", int64(q.Block())), attrInt("bits", int64(q.Bits))}})
	return out
}

// quantizationJSON is the config.json value recording q.
func quantizationJSON(q Quantization) (json.RawMessage, error) {
	type record struct {
		Quantization
		Scheme string `json:"scheme"`
		Name   string `json:"name"`
	}
	b, err := json.Marshal(record{q, "asymmetric block-wise with zero points (onnxruntime MatMulNBits)", q.String()})
	if err != nil {
		return nil, fmt.Errorf("quantization: %w", err)
	}
	return b, nil
}

// FolderQuantization reads the Quantization a folder's config records in
// QuantizationKey (the zero value when absent: a float32 model).
func FolderQuantization(cfg Config) (Quantization, error) {
	raw, ok := cfg.Extra[QuantizationKey]
	if !ok || string(raw) == "null" {
		return Quantization{}, nil
	}
	var q Quantization
	if err := json.Unmarshal(raw, &q); err != nil {
		return Quantization{}, fmt.Errorf("config %s: %w", QuantizationKey, err)
	}
	if err := q.Validate(); err != nil {
		return Quantization{}, fmt.Errorf("config %s: %w", QuantizationKey, err)
	}
	return q, nil
}
