package actor

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/advancedclimatesystems/gonnx/onnx"
	"google.golang.org/protobuf/proto"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
)

// halfCacheModel writes the tiny model with a float16 key/value cache: each
// past input becomes float16 and is cast up for the graph, and each present
// output is cast down, as fp16 exports have it.
func halfCacheModel(t *testing.T) string {
	t.Helper()
	testsupport.RequireORT(t)
	dir, _ := tinyModel(t, 8)
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.InitializerRange = 0.2
	w, err := llama.RandomWeights(cfg, 8)
	if err != nil {
		t.Fatal(err)
	}
	m, err := llama.Build(cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	half := int32(onnx.TensorProto_FLOAT16)
	cast := func(in, out string, to onnx.TensorProto_DataType) *onnx.NodeProto {
		return &onnx.NodeProto{OpType: "Cast", Input: []string{in}, Output: []string{out}, Name: "cast_" + out,
			Attribute: []*onnx.AttributeProto{{Name: "to", Type: onnx.AttributeProto_INT, I: int64(to)}}}
	}
	rename := func(from, to string) { // every use of a value inside the graph
		for _, n := range g.Node {
			for i, x := range n.Input {
				if x == from {
					n.Input[i] = to
				}
			}
			for i, x := range n.Output {
				if x == from {
					n.Output[i] = to
				}
			}
		}
	}
	var pre, post []*onnx.NodeProto
	for _, in := range g.Input {
		if strings.HasPrefix(in.Name, "past_key_values.") {
			rename(in.Name, in.Name+"_f32")
			in.Type.GetTensorType().ElemType = half
			pre = append(pre, cast(in.Name, in.Name+"_f32", onnx.TensorProto_FLOAT))
		}
	}
	for _, out := range g.Output {
		if strings.HasPrefix(out.Name, "present.") {
			rename(out.Name, out.Name+"_f32")
			out.Type.GetTensorType().ElemType = half
			post = append(post, cast(out.Name+"_f32", out.Name, onnx.TensorProto_FLOAT16))
		}
	}
	g.Node = append(append(pre, g.Node...), post...)
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "onnx", "model.onnx"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFloat16Cache runs a model whose cache is float16: the engine moves
// two-byte elements, batching does not change the tokens, and the recorded
// logprobs stay within float16 rounding of the teacher-forced ones.
func TestFloat16Cache(t *testing.T) {
	dir := halfCacheModel(t)
	pol, err := Load(context.Background(), LoadOptions{Dir: dir, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	if pol.KVType() != "float16" || pol.io.kvElem != 2 {
		t.Fatalf("cache type %q, element size %d", pol.KVType(), pol.io.kvElem)
	}
	s := testSampling()
	a := generate(t, pol, 16, 4, s)
	b := generate(t, pol, 3, 1, s)
	var seqs [][]int32
	var plens []int
	for i := range a {
		if len(a[i].tokens) != len(b[i].tokens) {
			t.Fatalf("trajectory %d: %d tokens at batch 16, %d at batch 3", i, len(a[i].tokens), len(b[i].tokens))
		}
		for j := range a[i].tokens {
			if a[i].tokens[j] != b[i].tokens[j] {
				t.Fatalf("trajectory %d differs at %d between batch 16 and 3", i, j)
			}
		}
		seqs = append(seqs, a[i].tokens)
		plens = append(plens, a[i].prompt)
	}
	scored, err := pol.ScoreTemperature(context.Background(), seqs, plens, s.Temperature)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, tr := range a {
		for j, lp := range tr.logprobs {
			if tr.mask[j] == 1 {
				worst = math.Max(worst, math.Abs(float64(lp-scored[i][j])))
			}
		}
	}
	if worst > 0.05 {
		t.Fatalf("recorded logprobs differ from teacher-forced by up to %g", worst)
	}
	t.Logf("float16 cache: largest logprob difference %g", worst)
}

// TestUseCacheBranchInput: a merged decoder's use_cache_branch input (bool
// [1]) is discovered and fed; decoding matches the plain model.
func TestUseCacheBranchInput(t *testing.T) {
	testsupport.RequireORT(t)
	dir, _ := tinyModel(t, 9)
	plain, err := Load(context.Background(), LoadOptions{Dir: dir, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	cfg, _ := llama.ShapeConfig("tiny")
	cfg.InitializerRange = 0.2
	w, _ := llama.RandomWeights(cfg, 9)
	m, err := llama.Build(cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	g.Input = append(g.Input, &onnx.ValueInfoProto{Name: "use_cache_branch", Type: &onnx.TypeProto{Value: &onnx.TypeProto_TensorType{
		TensorType: &onnx.TypeProto_Tensor{ElemType: int32(onnx.TensorProto_BOOL), Shape: &onnx.TensorShapeProto{Dim: []*onnx.TensorShapeProto_Dimension{
			{Value: &onnx.TensorShapeProto_Dimension_DimValue{DimValue: 1}}}}}}}})
	// Route the flag into the graph so that it is a live input: logits +=
	// 0 * float(use_cache_branch).
	for _, n := range g.Node {
		for i, o := range n.Output {
			if o == "logits" {
				n.Output[i] = "logits_raw"
			}
		}
	}
	zero := &onnx.TensorProto{Name: "zero_f", DataType: int32(onnx.TensorProto_FLOAT), FloatData: []float32{0}}
	g.Initializer = append(g.Initializer, zero)
	g.Node = append(g.Node,
		&onnx.NodeProto{OpType: "Cast", Input: []string{"use_cache_branch"}, Output: []string{"ucb_f"}, Name: "ucb_cast",
			Attribute: []*onnx.AttributeProto{{Name: "to", Type: onnx.AttributeProto_INT, I: int64(onnx.TensorProto_FLOAT)}}},
		&onnx.NodeProto{OpType: "Mul", Input: []string{"ucb_f", "zero_f"}, Output: []string{"ucb_0"}, Name: "ucb_mul"},
		&onnx.NodeProto{OpType: "Add", Input: []string{"logits_raw", "ucb_0"}, Output: []string{"logits"}, Name: "ucb_add"})
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(t.TempDir(), "merged")
	if err := os.MkdirAll(filepath.Join(merged, "onnx"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(merged, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(merged, "onnx", "decoder_model_merged.onnx"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := Load(context.Background(), LoadOptions{Dir: merged, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	if !pol.io.hasUseCacheBranch || !strings.HasSuffix(pol.ModelPath(), "decoder_model_merged.onnx") {
		t.Fatalf("use_cache_branch %v, model %s", pol.io.hasUseCacheBranch, pol.ModelPath())
	}
	s := testSampling()
	a, b2 := generate(t, plain, 16, 4, s), generate(t, pol, 16, 4, s)
	for i := range a {
		if len(a[i].tokens) != len(b2[i].tokens) {
			t.Fatalf("trajectory %d differs", i)
		}
		for j := range a[i].tokens {
			if a[i].tokens[j] != b2[i].tokens[j] {
				t.Fatalf("trajectory %d differs at %d", i, j)
			}
		}
	}
}
