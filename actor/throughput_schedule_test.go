package actor

import (
	"context"
	"slices"
	"testing"
)

func TestBenchPausePoints(t *testing.T) {
	cases := []struct {
		every, sample, newTokens int
		want                     []int
	}{
		{8, 0, 64, []int{8, 16, 24, 32, 40, 48, 56}}, // the 64th token ends the sequence
		{8, 1, 64, []int{9, 18, 27, 36, 45, 54, 63}},
		{8, 3, 20, []int{11}},
		{8, 4, 20, []int{8, 16}}, // the interval cycles every 4 samples
		{3, 2, 5, nil},
		{0, 1, 64, nil},
	}
	for _, c := range cases {
		if got := BenchPausePoints(c.every, c.sample, c.newTokens); !slices.Equal(got, c.want) {
			t.Errorf("BenchPausePoints(%d, %d, %d) = %v, want %v", c.every, c.sample, c.newTokens, got, c.want)
		}
	}
}

// TestBenchPauseSchedule checks that the engine pauses each sample exactly at
// BenchPausePoints (the schedule the transformers.js peer reproduces) and
// that MeasureThroughput counts those pauses.
func TestBenchPauseSchedule(t *testing.T) {
	pol, _ := loadTiny(t, 5)
	const every, newTokens, G = 3, 14, 6
	eng := NewEngine(pol, EngineOptions{MaxBatch: G})
	defer eng.Close()
	seeds := make([]uint64, G)
	for i := range seeds {
		seeds[i] = SampleSeed(1, "sched", i)
	}
	s := Sampling{Temperature: 1, TopK: 50, MaxSampledTokens: newTokens, EOS: []int32{}}
	if _, err := eng.AddGroup(GroupRequest{ID: "sched", Prompt: BenchPrompt(5), Seeds: seeds, Sampling: s,
		NewDetector: benchDetectors(every)}); err != nil {
		t.Fatal(err)
	}
	got := make([][]int, G)
	inject := BenchPrompt(2)
	for !eng.Idle() {
		events, err := eng.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.Kind != EventToolCall {
				continue
			}
			if n := ev.Seq.SampledTokens(); n < newTokens {
				got[ev.Seq.Index()] = append(got[ev.Seq.Index()], n)
			}
			if err := ev.Seq.Inject(inject); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := 0
	for i := range got {
		pts := BenchPausePoints(every, i, newTokens)
		want += len(pts)
		if !slices.Equal(got[i], pts) {
			t.Errorf("sample %d paused after %v sampled tokens, want %v", i, got[i], pts)
		}
	}

	res, err := MeasureThroughput(context.Background(), pol, ThroughputOptions{Concurrency: G, GroupSize: G, PromptLen: 5,
		NewTokens: newTokens, PauseEvery: every, InjectTokens: 2, JobSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pauses != int64(want) || res.Generated != G*newTokens {
		t.Errorf("MeasureThroughput: %d pauses, %d generated; want %d, %d", res.Pauses, res.Generated, want, G*newTokens)
	}
}
