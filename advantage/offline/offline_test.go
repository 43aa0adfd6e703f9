package offline

import (
	"context"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/advantage"
	"github.com/toolrl/toolrl/traj"
)

type sliceSource struct{ ts []traj.Trajectory }

func (s *sliceSource) Next() (traj.Trajectory, error) {
	if len(s.ts) == 0 {
		return traj.Trajectory{}, io.EOF
	}
	t := s.ts[0]
	s.ts = s.ts[1:]
	return t, nil
}

type sliceSink struct{ recs []traj.AdvantageRecord }

func (s *sliceSink) Write(recs ...traj.AdvantageRecord) error {
	s.recs = append(s.recs, recs...)
	return nil
}

// shuffledGroups returns n groups of job "job" and their trajectories in an
// order where members of a group are spread over a window of about 20 groups.
func shuffledGroups(n int) ([]*traj.Group, []traj.Trajectory) {
	groups := make([]*traj.Group, n)
	var all []traj.Trajectory
	for i := range groups {
		groups[i] = testGroup(i)
		all = append(all, groups[i].Trajectories...)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range all {
		j := min(len(all)-1, i+rng.IntN(20*testG))
		all[i], all[j] = all[j], all[i]
	}
	return groups, all
}

func offlineRun(t *testing.T, all []traj.Trajectory, opts Options) (map[string]traj.AdvantageRecord, Stats) {
	t.Helper()
	sink := &sliceSink{}
	st, err := Run(context.Background(), &sliceSource{ts: append([]traj.Trajectory(nil), all...)}, sink, opts)
	if err != nil {
		t.Fatalf("offline.Run: %v", err)
	}
	out := map[string]traj.AdvantageRecord{}
	for _, r := range sink.recs {
		if _, dup := out[r.TrajectoryID]; dup {
			t.Fatalf("record %s written twice", r.TrajectoryID)
		}
		out[r.TrajectoryID] = r
	}
	return out, st
}

func TestOfflineGroupsNonContiguousMembers(t *testing.T) {
	groups, all := shuffledGroups(150)
	cfg := advantage.DefaultConfig()
	cfg.Mode, cfg.KL = advantage.ModeHybrid, advantage.KLK2
	want := map[string]traj.AdvantageRecord{}
	for _, g := range groups {
		recs, _, err := advantage.Compute(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			want[r.TrajectoryID] = r
		}
	}
	inMemory, st := offlineRun(t, all, Options{Config: cfg})
	if st.Spilled != 0 || st.Groups != 150 || st.Trajectories != int64(len(all)) {
		t.Errorf("in-memory stats %+v", st)
	}
	spilled, st := offlineRun(t, all, Options{Config: cfg, MemoryLimit: 8 << 10, SpillDir: t.TempDir()})
	if st.Spilled == 0 || st.Groups != 150 {
		t.Errorf("spilling run did not spill: %+v", st)
	}
	if st.PeakPartialBytes > 16<<10 {
		t.Errorf("peak partial bytes %d, limit 8 KiB", st.PeakPartialBytes)
	}
	for name, got := range map[string]map[string]traj.AdvantageRecord{"in memory": inMemory, "spilled": spilled} {
		if len(got) != len(want) {
			t.Errorf("%s: %d records, want %d", name, len(got), len(want))
		}
		for id, w := range want {
			if g, ok := got[id]; !ok || !reflect.DeepEqual(normRecord(g), normRecord(w)) {
				t.Fatalf("%s: record %s differs from advantage.Compute on the whole group", name, id)
			}
		}
	}
}

// normRecord maps empty slices to nil: a spilled trajectory comes back from
// JSON with nil where the original had empty.
func normRecord(r traj.AdvantageRecord) traj.AdvantageRecord {
	if len(r.StepRewards) == 0 {
		r.StepRewards = nil
	}
	if len(r.Reward.Parts) == 0 {
		r.Reward.Parts = nil
	}
	return r
}

func TestOfflineIncompleteGroups(t *testing.T) {
	_, all := shuffledGroups(10)
	var cut []traj.Trajectory
	for _, tr := range all {
		if !(tr.GroupID == "job/p00003" && tr.SampleIndex == 2) {
			cut = append(cut, tr)
		}
	}
	for _, limit := range []int64{0, 1 << 10} {
		_, err := Run(context.Background(), &sliceSource{ts: cut}, &sliceSink{}, Options{Config: advantage.DefaultConfig(), MemoryLimit: limit})
		if err == nil || !strings.Contains(err.Error(), "job/p00003 has 3 of its 4") {
			t.Errorf("limit %d: incomplete group: %v", limit, err)
		}
		got, st := offlineRun(t, cut, Options{Config: advantage.DefaultConfig(), MemoryLimit: limit, AllowIncomplete: true})
		if st.Incomplete != 1 || len(got) != 39 {
			t.Errorf("limit %d: AllowIncomplete: %d records, %+v", limit, len(got), st)
		}
	}
}

type fakeScorer struct{ calls, maxBatch int }

func (f *fakeScorer) ScoreTemperature(_ context.Context, seqs [][]int32, promptLens []int, _ float64) ([][]float32, error) {
	f.calls++
	f.maxBatch = max(f.maxBatch, len(seqs))
	out := make([][]float32, len(seqs))
	for i, s := range seqs {
		out[i] = make([]float32, len(s)-promptLens[i])
		for j := range out[i] {
			out[i][j] = -0.5
		}
	}
	return out, nil
}

func TestOfflineScoresMissingReferenceLogprobs(t *testing.T) {
	_, all := shuffledGroups(12)
	for i := range all {
		if i%2 == 0 {
			all[i].RefLogprobs = nil
		}
	}
	cfg := advantage.DefaultConfig()
	cfg.KL, cfg.KLCoef = advantage.KLK1, 0.01
	sc := &fakeScorer{}
	got, st := offlineRun(t, all, Options{Config: cfg, RefScorer: sc, RefBatch: 5})
	if st.RefScored != int64((len(all)+1)/2) || sc.maxBatch > 5 || sc.calls == 0 {
		t.Errorf("scored %d (calls %d, max batch %d)", st.RefScored, sc.calls, sc.maxBatch)
	}
	if len(got) != len(all) {
		t.Fatalf("%d records for %d trajectories", len(got), len(all))
	}
	for _, r := range got {
		if len(r.KL) == 0 || len(r.RefLogprobs) == 0 {
			t.Fatalf("record %s has no KL", r.TrajectoryID)
		}
	}
	// Without a scorer, folding KL needs every reference: an error.
	_, err := Run(context.Background(), &sliceSource{ts: all}, &sliceSink{}, Options{Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "ref_log_prob") {
		t.Errorf("missing references without a scorer: %v", err)
	}
}

// Spilling (with files split again past the limit) is deterministic: the
// same input gives the same records in the same order.
func TestOfflineSpillIsDeterministic(t *testing.T) {
	_, all := shuffledGroups(80)
	var orders [2][]string
	for run := range orders {
		sink := &sliceSink{}
		st, err := Run(context.Background(), &sliceSource{ts: append([]traj.Trajectory(nil), all...)}, sink,
			Options{Config: advantage.DefaultConfig(), MemoryLimit: 2 << 10, SpillDir: t.TempDir()})
		if err != nil || st.Spilled == 0 || st.Records != int64(len(all)) {
			t.Fatalf("run %d: %+v, %v", run, st, err)
		}
		for _, r := range sink.recs {
			orders[run] = append(orders[run], r.TrajectoryID)
		}
	}
	if !reflect.DeepEqual(orders[0], orders[1]) {
		t.Error("two spilling runs wrote records in different orders")
	}
}

// countingSource counts the trajectories handed out.
type countingSource struct {
	sliceSource
	read int
}

func (s *countingSource) Next() (traj.Trajectory, error) {
	t, err := s.sliceSource.Next()
	if err == nil {
		s.read++
	}
	return t, err
}

// heldSink records, at each write, how many trajectories have been read but
// not yet written: what Run holds.
type heldSink struct {
	src             *countingSource
	written, peak   int
	writesBeforeEOF int
}

func (s *heldSink) Write(recs ...traj.AdvantageRecord) error {
	s.written += len(recs)
	s.peak = max(s.peak, s.src.read-s.written)
	if len(s.src.ts) > 0 {
		s.writesBeforeEOF++
	}
	return nil
}

// One trajectory lacking references followed by many groups that have them:
// the later groups must not wait in memory for a scoring batch to fill.
func TestOfflineRefScorerMemoryIsBounded(t *testing.T) {
	const n, refBatch = 200, 16
	var all []traj.Trajectory
	for i := range n {
		all = append(all, testGroup(i).Trajectories...)
	}
	all[0].RefLogprobs = nil
	cfg := advantage.DefaultConfig()
	cfg.KL = advantage.KLK3
	src := &countingSource{sliceSource: sliceSource{ts: all}}
	sink := &heldSink{src: src}
	sc := &fakeScorer{}
	st, err := Run(context.Background(), src, sink, Options{Config: cfg, RefScorer: sc, RefBatch: refBatch})
	if err != nil {
		t.Fatal(err)
	}
	if st.RefScored != 1 || sc.calls != 1 || sink.written != n*testG {
		t.Fatalf("scored %d in %d calls, wrote %d records of %d", st.RefScored, sc.calls, sink.written, n*testG)
	}
	// Held: at most the group waiting for scoring and the group being read.
	if limit := 2 * testG; sink.peak > limit || sink.writesBeforeEOF == 0 {
		t.Errorf("held up to %d trajectories (limit %d), %d writes before the end of the input", sink.peak, limit, sink.writesBeforeEOF)
	}
	if st.PeakWaitingGroups != 1 {
		t.Errorf("peak waiting groups %d, want 1", st.PeakWaitingGroups)
	}
}
