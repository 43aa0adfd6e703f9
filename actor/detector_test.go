package actor

import "testing"

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
