package train

import (
	"math"
	"sort"
	"testing"

	"github.com/toolrl/toolrl/model/llama"
)

// TestMatchesReferenceForward checks that the trainer's forward equals
// model/llama's pure-Go reference (the ONNX graph's twin) on the same
// weights, for plain Llama and for every family feature of familyConfigs
// that the reference builds: a bias added in the wrong place, a q/k norm over
// the wrong span or a rotary table of the wrong scaling changes the logits.
func TestMatchesReferenceForward(t *testing.T) {
	cases := familyConfigs()
	cases["llama"] = tinyConfig()
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			m := tinyModelWith(t, cases[name])
			ref, err := llama.NewReference(m.LlamaConfig(12, 12, 12), m.LlamaWeights())
			if err != nil {
				t.Fatal(err)
			}
			tokens := []int32{12, 3, 5, 7, 1, 2, 9, 0, 11, 4, 8, 8, 6, 10, 2, 1}[:m.Config.MaxPos]
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
		})
	}
}
