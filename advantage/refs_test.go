package advantage

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// tempScorer scores every response token -T (so the temperature used can
// be read back), fails any call holding a sequence that starts with poison,
// and records each call's temperature and size.
type tempScorer struct {
	poison int32
	down   bool
	calls  []float64
	sizes  []int
}

func (s *tempScorer) ScoreTemperature(_ context.Context, seqs [][]int32, lens []int, T float64) ([][]float32, error) {
	s.calls, s.sizes = append(s.calls, T), append(s.sizes, len(seqs))
	if s.down {
		return nil, errors.New("scorer down")
	}
	out := make([][]float32, len(seqs))
	for i, seq := range seqs {
		if s.poison != 0 && seq[0] == s.poison {
			return nil, errors.New("bad sequence")
		}
		out[i] = make([]float32, len(seq)-lens[i])
		for j := range out[i] {
			out[i][j] = float32(-T)
		}
	}
	return out, nil
}

func (s *tempScorer) VocabSize() int { return 1000 }

// Each trajectory is scored at its own temperature (1 when greedy, the
// fallback when it records none), in calls of one temperature and at most
// batch sequences; a sequence that fails alone fails only itself; a scorer
// that fails everything, probe included, is an ErrRefScorer.
func TestScoreReferences(t *testing.T) {
	var ts []*traj.Trajectory
	for i, temp := range []*float64{trajtest.Temperature(0.7), nil, trajtest.Temperature(0), trajtest.Temperature(0.7), trajtest.Temperature(0.7), nil} {
		g := trajtest.Group(trajtest.Options{Temperature: temp, PromptTokens: []int32{int32(10 + i), 2}})
		ts = append(ts, &g.Trajectories[0])
	}
	sc := &tempScorer{}
	failed, err := ScoreReferences(context.Background(), sc, ts, 2, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range ts {
		want := float32(-ReferenceTemperature(tr, 1.5))
		if failed[i] != nil {
			t.Fatalf("trajectory %d: %v", i, failed[i])
		}
		for j, m := range tr.LossMask {
			if got := tr.RefLogprobs[j]; m == 1 && got != want || m == 0 && got != 0 {
				t.Errorf("trajectory %d token %d: ref %g, want %g (mask %d)", i, j, got, want, m)
			}
		}
	}
	if want := []float64{0.7, 0.7, 1.5, 1}; !slices.Equal(sc.calls, want) || !slices.Equal(sc.sizes, []int{2, 1, 2, 1}) {
		t.Errorf("calls at %v of %v sequences, want %v of [2 1 2 1]", sc.calls, sc.sizes, want)
	}

	for _, tr := range ts {
		tr.RefLogprobs = nil
	}
	sc = &tempScorer{poison: 13} // ts[3]
	failed, err = ScoreReferences(context.Background(), sc, ts, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ts {
		if (failed[i] != nil) != (i == 3) || (ts[i].RefLogprobs == nil) != (i == 3) {
			t.Errorf("poisoned ts[3]: trajectory %d failed %v, scored %v", i, failed[i], ts[i].RefLogprobs != nil)
		}
	}
	ts[0].Tokens[0] = 5000 // outside the vocabulary: refused before any call
	ts[0].RefLogprobs = nil
	if failed, _ := ScoreReferences(context.Background(), &tempScorer{}, ts[:1], 4, 1); failed[0] == nil {
		t.Error("a token outside the vocabulary was scored")
	}
	ts[0].Tokens[0] = 10
	if _, err := ScoreReferences(context.Background(), &tempScorer{down: true}, ts, 4, 1); !errors.Is(err, ErrRefScorer) {
		t.Errorf("scorer down: %v, want ErrRefScorer", err)
	}
}
