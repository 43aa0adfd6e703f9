package actor

import (
	"fmt"
	"testing"
)

func TestBracketDetector(t *testing.T) {
	for _, c := range []struct {
		deltas []string
		calls  []string
		at     int // index of the delta that completes the first call, -1 none
	}{
		{[]string{"The answer is [CALC: 12 * 34]", " ok"}, []string{"[CALC: 12 * 34]"}, 0},
		{[]string{"x [", "CA", "LC:", " 1+", "2", "]", " done"}, []string{"[CALC: 1+2]"}, 5},
		{[]string{"[calc: 1] [", "] [A1 2] [X_1:3]"}, []string{"[X_1:3]"}, 1},
		{[]string{"no call ] here [CALC 3]"}, nil, -1},
		{[]string{"[[CALC: 2]"}, []string{"[CALC: 2]"}, 0},
	} {
		var d BracketDetector
		first := -1
		for i, delta := range c.deltas {
			if d.Feed(delta) && first < 0 {
				first = i
			}
		}
		if first != c.at || fmt.Sprint(d.Calls) != fmt.Sprint(c.calls) {
			t.Errorf("%q: completed at %d calls %q, want %d %q", c.deltas, first, d.Calls, c.at, c.calls)
		}
	}
}

func TestStopStringAcrossTokens(t *testing.T) {
	s := &Sequence{group: &group{sampling: Sampling{StopStrings: []string{"</answer>", "\n\n"}}, maxStop: 9}}
	for i, delta := range []string{"the ", "</ans", "wer", "> and"} {
		hit := s.stopMatched(delta)
		if hit != (i == 3) {
			t.Fatalf("delta %d %q: hit %v", i, delta, hit)
		}
	}
	s.tail = nil
	if !s.stopMatched("a\n\nb") {
		t.Fatal("stop string inside one delta not found")
	}
}
