package calcdata

import "testing"

func TestExtractAnswer(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{" [CALC: 12+34] = 46. The answer is 46.", "46", true},
		{" The answer is 1,234.", "1234", true},
		{" The answer is 7", "7", true},
		{" The answer is 2.5.", "2.5", true},
		{" The answer is -3.", "-3", true},
		{" [CALC: 1+2] = 3.", "", false},
		{" The answer is 4. And more", "", false},
	} {
		got, ok := ExtractAnswer(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ExtractAnswer(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestMetrics(t *testing.T) {
	var m Metrics
	m.AddGroup([]SampleResult{{Calls: 1, CallsParsed: 1, Answered: true, Correct: true}, {Answered: true}})
	m.AddGroup([]SampleResult{{Calls: 2, CallsParsed: 1, Answered: true, Correct: true}, {Calls: 1, CallsParsed: 1, Answered: true, Correct: true}})
	want := Metrics{Prompts: 2, Samples: 4, Calls: 4, CallsParsed: 3, ToolSamples: 3, ToolCorrect: 3, DirectSamples: 1,
		Answered: 4, Correct: 3, MixedGroups: 1}
	if m != want {
		t.Fatalf("metrics %+v, want %+v", m, want)
	}
	if r := m.Report(); len(r) == 0 {
		t.Fatal("empty report")
	}
}
