package llama

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/advancedclimatesystems/gonnx/onnx"
	ortgo "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/safetensors"
)

// halfModel runs a float16 graph (float16 cache, float32 logits) in ORT.
type halfModel struct {
	cfg  Config
	sess *ortgo.DynamicAdvancedSession
}

// halfCache is a float16 key/value cache as raw little-endian bytes.
type halfCache struct {
	len        int
	key, value [][]byte
}

func encodeFloat16(t testing.TB, cfg Config, w Weights) []byte {
	t.Helper()
	gp, inits, err := graphFor(cfg, w, ONNXOptions{Float16: true})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := encode(&buf, gp, inits, nil, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// newHalfModel opens the float16 graph; unfused runs it without ORT's graph
// optimizations, whose fused RMSNorm computes in float32 whatever the graph
// says (other execution providers and runtimes need not fuse).
func newHalfModel(t testing.TB, cfg Config, w Weights, unfused bool) *halfModel {
	t.Helper()
	b := encodeFloat16(t, cfg, w)
	m := newORTSession(t, cfg, func(in, out []string, opts *ortgo.SessionOptions) (*ortgo.DynamicAdvancedSession, error) {
		if unfused {
			if err := opts.SetGraphOptimizationLevel(ortgo.GraphOptimizationLevelDisableAll); err != nil {
				return nil, err
			}
		}
		return ortgo.NewDynamicAdvancedSessionWithONNXData(b, in, out, opts)
	})
	return &halfModel{cfg: cfg, sess: m.sess}
}

// run feeds one step; it returns the float32 logits [B*S*V] and the present
// cache.
func (m *halfModel) run(t testing.TB, in Inputs, past *halfCache) ([]float32, *halfCache) {
	t.Helper()
	cfg := m.cfg
	B, S := len(in.InputIDs), len(in.InputIDs[0])
	P := 0
	if past != nil {
		P = past.len
	}
	T := P + S
	mask := in.AttentionMask
	if mask == nil {
		mask = make([][]int64, B)
		for b := range mask {
			mask[b] = ones(T)
		}
	}
	pos := in.PositionIDs
	if pos == nil {
		pos = PositionIDs(mask, S)
	}
	var values []ortgo.Value
	defer func() {
		for _, v := range values {
			v.Destroy()
		}
	}()
	add := func(v ortgo.Value, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	half := func(shape ortgo.Shape, b []byte) (ortgo.Value, error) {
		if len(b) == 0 {
			b = make([]byte, 1) // ORT needs a pointer even for zero elements
		}
		return ortgo.NewCustomDataTensor(shape, b, ortgo.TensorElementDataTypeFloat16)
	}
	add(ortgo.NewTensor(ortgo.NewShape(int64(B), int64(S)), flat(in.InputIDs)))
	add(ortgo.NewTensor(ortgo.NewShape(int64(B), int64(T)), flat(mask)))
	add(ortgo.NewTensor(ortgo.NewShape(int64(B), int64(S)), flat(pos)))
	kvH, D := int64(cfg.KVHeads()), int64(cfg.HeadDimension())
	L := cfg.NumHiddenLayers
	for l := 0; l < L; l++ {
		var k, v []byte
		if past != nil {
			k, v = past.key[l], past.value[l]
		}
		add(half(ortgo.NewShape(int64(B), kvH, int64(P), D), k))
		add(half(ortgo.NewShape(int64(B), kvH, int64(P), D), v))
	}
	nIn := len(values)
	logits := make([]float32, B*S*cfg.VocabSize)
	add(ortgo.NewTensor(ortgo.NewShape(int64(B), int64(S), int64(cfg.VocabSize)), logits))
	present := &halfCache{len: T}
	for l := 0; l < L; l++ {
		present.key = append(present.key, make([]byte, 2*int64(B)*kvH*int64(T)*D))
		present.value = append(present.value, make([]byte, 2*int64(B)*kvH*int64(T)*D))
		add(half(ortgo.NewShape(int64(B), kvH, int64(T), D), present.key[l]))
		add(half(ortgo.NewShape(int64(B), kvH, int64(T), D), present.value[l]))
	}
	if err := m.sess.Run(values[:nIn], values[nIn:]); err != nil {
		t.Fatalf("ORT run of the float16 graph (B=%d S=%d P=%d): %v", B, S, P, err)
	}
	return logits, present
}

// TestFloat16GraphMatchesFloat32: the float16 graph of each test config
// (GQA, MHA, tied, biases) runs in ORT with a float16 cache; its float32
// logits stay within float16 rounding of the float32 graph's, on a prefill,
// three cached decode steps, and a left-padded batch (the masked-row path
// whose -1e9 bias float16 cannot hold). A rewrite that computed RoPE tables
// or softmax in float16, dropped a cast, or mixed up a cache layout fails
// by far more than the tolerance; so does a weight left in float32 reading
// a float16 activation (ORT rejects the graph).
func TestFloat16GraphMatchesFloat32(t *testing.T) {
	testsupport.RequireORT(t)
	for name, cfg := range testConfigs(t) {
		t.Run(name, func(t *testing.T) {
			w := mustRandom(t, cfg, 7)
			m32 := newORTModel(t, cfg, w)
			m16 := newHalfModel(t, cfg, w, false)
			const prefill, steps = 9, 3
			seq := [][]int64{tokens(prefill+steps, cfg.VocabSize, 1), tokens(prefill+steps, cfg.VocabSize, 2)}
			full := m32.run(t, Inputs{InputIDs: seq}, nil)
			scale := 0.0
			for _, v := range full.Logits {
				scale = math.Max(scale, math.Abs(float64(v)))
			}
			worst := 0.0
			check := func(what string, got, want []float32) {
				t.Helper()
				assertFinite(t, what, got)
				d := maxAbsDiff(got, want)
				worst = math.Max(worst, d)
				// float16 keeps 11 significant bits: a relative error of a
				// few 1e-3 of the largest logit after the layers' roundings.
				if d > 1e-2*scale {
					t.Fatalf("%s: float16 logits differ from float32 by %.4g (largest |logit| %.3g)", what, d, scale)
				}
			}
			head := [][]int64{seq[0][:prefill], seq[1][:prefill]}
			logits, cache := m16.run(t, Inputs{InputIDs: head}, nil)
			// Dynamic RoPE's frequencies follow each call's length, so the
			// float32 graph is run call for call with its own cache there.
			want := func(b, s int) []float32 { return full.At(b, s) }
			var step32 *Output
			if rs, _ := cfg.Rope(); rs.Kind() == RopeDynamic {
				step32 = m32.run(t, Inputs{InputIDs: head}, nil)
				want = func(b, s int) []float32 {
					if s < prefill {
						return step32.At(b, s)
					}
					return step32.At(b, 0)
				}
			}
			V := cfg.VocabSize
			for b := 0; b < 2; b++ {
				for s := 0; s < prefill; s++ {
					check(fmt.Sprintf("prefill row %d pos %d", b, s), logits[(b*prefill+s)*V:(b*prefill+s+1)*V], want(b, s))
				}
			}
			for s := prefill; s < prefill+steps; s++ {
				next := [][]int64{{seq[0][s]}, {seq[1][s]}}
				logits, cache = m16.run(t, Inputs{InputIDs: next}, cache)
				if step32 != nil {
					step32 = m32.run(t, Inputs{InputIDs: next}, step32.Present)
				}
				for b := 0; b < 2; b++ {
					check(fmt.Sprintf("step row %d pos %d", b, s), logits[b*V:(b+1)*V], want(b, s))
				}
			}
			padded := leftPadded([][]int64{tokens(3, V, 5), tokens(8, V, 6)}, int64(ByteEndOfText))
			got16, _ := m16.run(t, padded, nil)
			got32 := m32.run(t, padded, nil)
			assertFinite(t, "padded float16 logits", got16)
			n := len(padded.InputIDs[0])
			for s := n - 3; s < n; s++ { // the real positions of the short row
				check(fmt.Sprintf("padded row 0 pos %d", s), got16[s*V:(s+1)*V], got32.At(0, s))
			}
			t.Logf("%s: float16 vs float32 logits: max abs diff %.3g, largest |logit| %.3g", name, worst, scale)
		})
	}
}

// TestFloat16GraphKeepsSensitivePartsFloat32 feeds what real checkpoints
// have and the random ones lack: residual activations in the thousands
// (squares past float16's 65504) and positions past 2048 (not integers in
// float16). The float16 graph must stay within the same tolerance of the
// float32 graph, run without graph optimizations.
//
// What this cannot show on the CPU: ONNX Runtime's CPU provider has no
// float16 kernels for Pow, ReduceMean, Sqrt, Div, Softmax, Cos or Sin and
// wraps such nodes in casts to float32 itself (InsertCastTransformer, not
// disabled with the optimizations), so a graph that left them in float16
// passes here too. The float32 parts of the graph are for providers that do
// have float16 kernels (CUDA); TestFloat16GraphTypes checks they are there.
func TestFloat16GraphKeepsSensitivePartsFloat32(t *testing.T) {
	testsupport.RequireORT(t)
	cfg := testConfigs(t)["tiny"]
	w := mustRandom(t, cfg, 11)
	// RMSNorm is scale-invariant, so a large embedding changes the residual
	// stream's magnitude and little else.
	emb := w[EmbedName]
	big := make([]float32, len(emb.Data))
	for i, v := range emb.Data {
		big[i] = 2000 * v
	}
	w[EmbedName] = Tensor{Shape: emb.Shape, Data: big}
	m32 := newORTModel(t, cfg, w)
	m16 := newHalfModel(t, cfg, w, true)
	const S = 6
	ids := [][]int64{tokens(S, cfg.VocabSize, 3)}
	pos := [][]int64{make([]int64, S)}
	for i := range pos[0] {
		pos[0][i] = 3001 + 7*int64(i)
	}
	in := Inputs{InputIDs: ids, AttentionMask: [][]int64{ones(S)}, PositionIDs: pos}
	got, _ := m16.run(t, in, nil)
	want := m32.run(t, in, nil)
	assertFinite(t, "float16 logits", got)
	scale := 0.0
	for _, v := range want.Logits {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	d := maxAbsDiff(got, want.Logits)
	t.Logf("residual x2000, positions from 3001: float16 vs float32 max abs diff %.3g, largest |logit| %.3g", d, scale)
	if d > 1e-2*scale {
		t.Fatalf("float16 logits differ from float32 by %.4g (largest |logit| %.3g)", d, scale)
	}
}

// TestFloat16GraphTypes checks the rewritten graph's interface and storage:
// cache inputs and outputs float16, logits float32, every weight matrix
// stored as float16 and the norms, RoPE frequencies and mask constants in
// float32, and about half the float32 graph's bytes.
func TestFloat16GraphTypes(t *testing.T) {
	cfg := testConfigs(t)["qwen2_tied_bias"]
	w := mustRandom(t, cfg, 3)
	var m onnx.ModelProto
	if err := proto.Unmarshal(encodeFloat16(t, cfg, w), &m); err != nil {
		t.Fatal(err)
	}
	elem := func(vi *onnx.ValueInfoProto) onnx.TensorProto_DataType {
		return onnx.TensorProto_DataType(vi.Type.GetTensorType().GetElemType())
	}
	for _, vi := range append(m.Graph.Input, m.Graph.Output...) {
		want := onnx.TensorProto_FLOAT16
		switch vi.Name {
		case InputIDsName, AttentionMaskName, PositionIDsName:
			want = onnx.TensorProto_INT64
		case LogitsName:
			want = onnx.TensorProto_FLOAT
		}
		if elem(vi) != want {
			t.Errorf("%s is %s, want %s", vi.Name, elem(vi), want)
		}
	}
	var bytes16 int
	for _, in := range m.Graph.Initializer {
		n := numelOf(in.Dims)
		dt := onnx.TensorProto_DataType(in.DataType)
		bytes16 += len(in.RawData)
		switch {
		case in.Name == "rope_inv_freq" || in.Name == NormName:
			if dt != onnx.TensorProto_FLOAT {
				t.Errorf("%s is %s, want float32", in.Name, dt)
			}
		case n >= int64(cfg.HiddenSize)*int64(cfg.HiddenSize/4) && dt != onnx.TensorProto_FLOAT16:
			t.Errorf("weight %s %v is %s, want float16", in.Name, in.Dims, dt)
		}
		if dt == onnx.TensorProto_FLOAT16 {
			for i := 0; i+1 < len(in.RawData); i += 2 {
				if v := safetensors.F16ToF32(uint16(in.RawData[i]) | uint16(in.RawData[i+1])<<8); math.IsInf(float64(v), 0) || v != v {
					t.Fatalf("%s holds %v", in.Name, v)
				}
			}
		}
	}
	// The norm statistics, the softmax and the RoPE tables run in float32:
	// every float input of those nodes is a float32 value.
	typ := map[string]onnx.TensorProto_DataType{}
	for _, in := range m.Graph.Initializer {
		typ[in.Name] = onnx.TensorProto_DataType(in.DataType)
	}
	for _, vi := range m.Graph.Input {
		typ[vi.Name] = elem(vi)
	}
	counted := map[string]int{}
	for _, n := range m.Graph.Node {
		ot, err := outputType(n, typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range n.Output {
			typ[o] = ot
		}
		if float32Ops[n.OpType] {
			counted[n.OpType]++
			for _, x := range n.Input {
				if typ[x] == onnx.TensorProto_FLOAT16 {
					t.Errorf("%s (%s) reads float16 %s", n.Name, n.OpType, x)
				}
			}
		}
	}
	L := cfg.NumHiddenLayers
	for op, want := range map[string]int{"Pow": 2*L + 1, "Softmax": L, "Cos": 1, "Sin": 1} {
		if counted[op] != want {
			t.Errorf("%d %s nodes, want %d", counted[op], op, want)
		}
	}

	m32, err := Build(cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	var bytes32 int
	for _, in := range m32.Graph.Initializer {
		bytes32 += len(in.RawData)
	}
	if r := float64(bytes16) / float64(bytes32); r > 0.55 || r < 0.45 {
		t.Fatalf("float16 initializers are %d bytes, %.2f of float32's %d", bytes16, r, bytes32)
	}
}
