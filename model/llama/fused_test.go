package llama

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/toolrl/toolrl/internal/testsupport"
)

// fusedORT runs a fused graph in the real ONNX Runtime, its key/value
// cache one preallocated buffer per layer bound as both past and present.
type fusedORT struct {
	cfg  Config
	sess *ortgo.DynamicAdvancedSession
	kv   []*ortgo.Tensor[float32] // [B, kvH, L, D] per layer, keys then values
	B, L int
}

func encodeFused(t testing.TB, cfg Config, w Weights, q Quantization) (*bytes.Buffer, []string) {
	t.Helper()
	gp, inits, err := buildFusedGraph(cfg, w, q)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range gp.Node {
		ops = append(ops, n.OpType)
	}
	var buf bytes.Buffer
	if err := encode(&buf, gp, inits, nil, nil); err != nil {
		t.Fatal(err)
	}
	return &buf, ops
}

func newFusedORT(t testing.TB, cfg Config, w Weights, q Quantization, B, L int) *fusedORT {
	t.Helper()
	testsupport.RequireORT(t)
	buf, _ := encodeFused(t, cfg, w, q)
	opts := oneThreadOptions(t)
	defer opts.Destroy()
	in := []string{InputIDsName, AttentionMaskName}
	out := []string{LogitsName}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		in = append(in, PastKeyName(i), PastValueName(i))
		out = append(out, PresentKeyName(i), PresentValueName(i))
	}
	sess, err := ortgo.NewDynamicAdvancedSessionWithONNXData(buf.Bytes(), in, out, opts)
	if err != nil {
		t.Fatalf("ORT rejected the fused model: %v", err)
	}
	m := &fusedORT{cfg: cfg, sess: sess, B: B, L: L}
	shape := ortgo.NewShape(int64(B), int64(cfg.KVHeads()), int64(L), int64(cfg.HeadDimension()))
	for i := 0; i < 2*cfg.NumHiddenLayers; i++ {
		ten, err := ortgo.NewEmptyTensor[float32](shape)
		if err != nil {
			t.Fatal(err)
		}
		m.kv = append(m.kv, ten)
	}
	t.Cleanup(func() {
		for _, v := range m.kv {
			v.Destroy()
		}
		sess.Destroy()
	})
	return m
}

// run feeds ids [B][S] (right padded) where row b holds lens[b] tokens in
// all after this call, and returns the logits [B, S, V].
func (m *fusedORT) run(t testing.TB, ids [][]int64, lens []int) []float32 {
	t.Helper()
	B, S := len(ids), len(ids[0])
	T := 0
	for _, n := range lens {
		T = max(T, n)
	}
	mask := make([]int64, B*T)
	for b, n := range lens {
		for c := 0; c < n; c++ {
			mask[b*T+c] = 1
		}
	}
	idT, err := ortgo.NewTensor(ortgo.NewShape(int64(B), int64(S)), flat(ids))
	if err != nil {
		t.Fatal(err)
	}
	defer idT.Destroy()
	maskT, err := ortgo.NewTensor(ortgo.NewShape(int64(B), int64(T)), mask)
	if err != nil {
		t.Fatal(err)
	}
	defer maskT.Destroy()
	V := m.cfg.VocabSize
	logits, err := ortgo.NewEmptyTensor[float32](ortgo.NewShape(int64(B), int64(S), int64(V)))
	if err != nil {
		t.Fatal(err)
	}
	defer logits.Destroy()
	ins := []ortgo.Value{idT, maskT}
	outs := []ortgo.Value{logits}
	for _, v := range m.kv {
		ins = append(ins, v)
		outs = append(outs, v)
	}
	if err := m.sess.Run(ins, outs); err != nil {
		t.Fatalf("ORT run (B=%d S=%d T=%d): %v", B, S, T, err)
	}
	return append([]float32(nil), logits.GetData()...)
}

// logSoftmax returns log-softmax of row in float64.
func logSoftmax(row []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = max(m, float64(v))
	}
	var sum float64
	for _, v := range row {
		sum += math.Exp(float64(v) - m)
	}
	out := make([]float64, len(row))
	for i, v := range row {
		out[i] = float64(v) - m - math.Log(sum)
	}
	return out
}

// assertLogprobsClose compares logits and their log-softmax.
func assertLogprobsClose(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	assertClose(t, what+" logits", got, want, tol)
	a, b := logSoftmax(got), logSoftmax(want)
	var d float64
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	if d > tol {
		t.Fatalf("%s: max |Δlogprob| %.3g > %.0e", what, d, tol)
	}
}

// fusedCheck runs the fused graph against the Go reference forward: a
// right-padded first prompt of two rows of different lengths, decode steps
// in which the rows sit at different lengths, and on row 0 a second prompt
// on top of its cache (a resumed sequence's injection).
func fusedCheck(t *testing.T, cfg Config, w, refW Weights, q Quantization, tol float64) {
	m := newFusedORT(t, cfg, w, q, 2, 24)
	ref := mustReference(t, cfg, refW)
	V := cfg.VocabSize
	rows := [][]int64{tokens(7, V, 1), tokens(4, V, 2)}
	// Prefill: [2, 7], row 1 right padded.
	pre := [][]int64{rows[0], append(append([]int64(nil), rows[1]...), 0, 0, 0)}
	lens := []int{7, 4}
	got := m.run(t, pre, lens)
	refs := make([]*Output, 2)
	for b := range rows {
		out, err := ref.Forward(Inputs{InputIDs: [][]int64{rows[b]}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		refs[b] = out
		for s := range rows[b] {
			assertLogprobsClose(t, fmt.Sprintf("prefill row %d pos %d", b, s), got[(b*7+s)*V:(b*7+s+1)*V], out.At(0, s), tol)
		}
	}
	// Decode: both rows together at lengths 7 and 4, then 8 and 5, ...
	for step := 0; step < 4; step++ {
		ids := [][]int64{{int64(30 + step)}, {int64(40 + step)}}
		lens[0]++
		lens[1]++
		got := m.run(t, ids, lens)
		for b := range rows {
			out, err := ref.Forward(Inputs{InputIDs: [][]int64{ids[b]}}, refs[b].Present)
			if err != nil {
				t.Fatal(err)
			}
			refs[b] = out
			assertLogprobsClose(t, fmt.Sprintf("decode step %d row %d", step, b), got[b*V:(b+1)*V], out.At(0, 0), tol)
		}
	}
}

func TestFusedGraphMatchesReference(t *testing.T) {
	for name, cfg := range testConfigs(t) {
		if err := FusedSupported(cfg); err != nil {
			continue // rope_dynamic: TestFusedRefusesDynamicRope
		}
		t.Run(name, func(t *testing.T) {
			w := mustRandom(t, cfg, 7)
			fusedCheck(t, cfg, w, w, Quantization{}, 1e-4)
		})
	}
}

// A second prompt on top of a cache (an injection after a tool call) and a
// prompt prefilled in chunks give the reference's logits.
func TestFusedSubsequentPromptMatchesReference(t *testing.T) {
	cfgs := testConfigs(t)
	for _, name := range []string{"tiny", "qwen3", "rope_yarn"} {
		cfg := cfgs[name]
		t.Run(name, func(t *testing.T) {
			w := mustRandom(t, cfg, 11)
			m := newFusedORT(t, cfg, w, Quantization{}, 1, 32)
			ref := mustReference(t, cfg, w)
			V := cfg.VocabSize
			seq := tokens(13, V, 3)
			// Chunks of 5, 1 and 7 tokens: a first prompt, a decode step and
			// a subsequent prompt.
			var past *KVCache
			n := 0
			for _, c := range []int{5, 1, 7} {
				chunk := seq[n : n+c]
				n += c
				got := m.run(t, [][]int64{chunk}, []int{n})
				out, err := ref.Forward(Inputs{InputIDs: [][]int64{chunk}}, past)
				if err != nil {
					t.Fatal(err)
				}
				past = out.Present
				for s := 0; s < c; s++ {
					assertLogprobsClose(t, fmt.Sprintf("chunk ending at %d pos %d", n, s), got[s*V:(s+1)*V], out.At(0, s), 1e-4)
				}
			}
		})
	}
}

func TestFusedQuantizedGraphMatchesDequantizedReference(t *testing.T) {
	cfgs := testConfigs(t)
	for _, q := range []Quantization{{Bits: 4, BlockSize: 32}, {Bits: 8, BlockSize: 16, LMHead: true}} {
		for _, name := range []string{"tiny", "qwen2_tied_bias"} {
			cfg := cfgs[name]
			t.Run(q.String()+"/"+name, func(t *testing.T) {
				w := mustRandom(t, cfg, 5)
				deq, err := DequantizedWeights(cfg, w, q)
				if err != nil {
					t.Fatal(err)
				}
				_, ops := encodeFused(t, cfg, w, q)
				if !strings.Contains(strings.Join(ops, " "), "MatMulNBits") {
					t.Fatalf("quantized fused graph has no MatMulNBits: %v", ops)
				}
				fusedCheck(t, cfg, w, deq, q, quantTolerance(q))
			})
		}
	}
}

// The graph is the fused one: attention, norms and residual adds are the
// contrib operators, not their decomposition.
func TestFusedGraphUsesFusedOperators(t *testing.T) {
	cfg := testConfigs(t)["tiny"]
	_, ops := encodeFused(t, cfg, mustRandom(t, cfg, 1), Quantization{})
	count := map[string]int{}
	for _, op := range ops {
		count[op]++
	}
	L := cfg.NumHiddenLayers
	want := map[string]int{"GroupQueryAttention": L, "SkipSimplifiedLayerNormalization": 2 * L,
		"SimplifiedLayerNormalization": 1, "MatMul": 4 * L, "Softmax": 0, "Pow": 0, "Transpose": 0}
	for op, n := range want {
		if count[op] != n {
			t.Errorf("%d %s nodes, want %d (ops: %v)", count[op], op, n, count)
		}
	}
}

func TestFusedRefusesDynamicRope(t *testing.T) {
	cfg := testConfigs(t)["rope_dynamic"]
	_, _, err := buildFusedGraph(cfg, mustRandom(t, cfg, 1), Quantization{})
	if err == nil || !strings.Contains(err.Error(), "dynamic") || !strings.Contains(err.Error(), cfg.ModelType) {
		t.Fatalf("want an error naming the family and dynamic rope, got %v", err)
	}
	if _, err := WriteONNX(t.TempDir()+"/m.onnx", cfg, mustRandom(t, cfg, 1), ONNXOptions{Fused: true, Float16: true}); err == nil {
		t.Fatal("fused float16 was accepted")
	}
}
