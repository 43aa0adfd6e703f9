package train

import (
	"math"
	"testing"

	"github.com/toolrl/toolrl/model/llama"
)

// TestMatchesReferenceForward checks that the trainer's forward equals
// model/llama's pure-Go reference (the ONNX graph's twin) on the same weights.
func TestMatchesReferenceForward(t *testing.T) {
	m := tinyModel(t)
	ref, err := llama.NewReference(m.LlamaConfig(12, 12, 12), m.LlamaWeights())
	if err != nil {
		t.Fatal(err)
	}
	tokens := []int32{12, 3, 5, 7, 1, 2, 9, 0, 11, 4}
	got, err := m.Logits(tokens)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(tokens))
	for i, v := range tokens {
		ids[i] = int64(v)
	}
	out, err := ref.Forward(llama.Inputs{InputIDs: [][]int64{ids}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.Vocab
	worst := 0.0
	for s := range tokens {
		want := out.At(0, s)
		for j := range V {
			worst = max(worst, math.Abs(float64(got[s*V+j]-want[j])))
		}
	}
	if worst > 1e-4 {
		t.Fatalf("largest logit difference from the reference: %g", worst)
	}
	t.Logf("largest logit difference from the reference: %.2g", worst)
}
