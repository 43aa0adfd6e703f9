package advantage

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/toolrl/toolrl/traj"
)

// Stats counts what Compute did; Add accumulates them across groups.
type Stats struct {
	Groups       int64 // groups seen
	Records      int64 // advantage records produced
	Tokens       int64 // response tokens in the records produced
	ZeroVariance int64 // groups whose rewards were all equal
	DroppedZero  int64 // of those, dropped (Config.DropZeroVariance)
	Stale        int64 // groups older than MaxStaleness allows
	DroppedStale int64 // of those, dropped (not Config.FlagStale)
}

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	s.Groups += o.Groups
	s.Records += o.Records
	s.Tokens += o.Tokens
	s.ZeroVariance += o.ZeroVariance
	s.DroppedZero += o.DroppedZero
	s.Stale += o.Stale
	s.DroppedStale += o.DroppedStale
}

// Compute returns one advantage record per trajectory of g (in g's order), or
// none when the group is dropped as stale or zero-variance. g must be valid
// (traj.Group.Validate); Compute checks only what it needs beyond that (step
// rewards in process modes, reference logprobs when KL is folded into the
// reward). Records are always traj.AdvantageSchema (v2) and carry their
// trajectory's temperature (nil for a v1 trajectory) and iteration (0 for
// v1). The records share g's
// token, mask and logprob slices and temperature: do not modify g while they
// are in use. cfg must pass Validate.
func Compute(g *traj.Group, cfg Config) ([]traj.AdvantageRecord, Stats, error) {
	return new(Scratch).Compute(g, cfg)
}

// Scratch is memory that Compute reuses from one group to the next: the
// records, their advantage and KL arrays and their spans. A service that
// computes many groups keeps a few (one per group in flight) instead of
// allocating, and the garbage collector has less to do. The zero value is
// ready to use; a Scratch is not safe for concurrent use.
type Scratch struct {
	block   []float32
	records []traj.AdvantageRecord
	spans   []traj.Segment
}

// Compute is the package's Compute with s's memory: the records it returns
// (and their Advantages, KL and Segments) are overwritten by s's next
// Compute, so the caller must be done with them by then.
func (s *Scratch) Compute(g *traj.Group, cfg Config) ([]traj.AdvantageRecord, Stats, error) {
	st := Stats{Groups: 1}
	n := len(g.Trajectories)
	if n == 0 {
		return nil, st, fmt.Errorf("advantage: group %s has no trajectories", g.GroupID)
	}

	stale := cfg.MaxStaleness >= 0 && cfg.CurrentPolicyVersion-g.PolicyVersion > cfg.MaxStaleness
	if stale {
		st.Stale = 1
		if !cfg.FlagStale {
			st.DroppedStale = 1
			return nil, st, nil
		}
	}

	useOutcome := cfg.Mode == ModeOutcome || cfg.Mode == ModeHybrid || cfg.Mode == ModeStepGroup
	useProcess := cfg.Mode == ModeProcess || cfg.Mode == ModeHybrid || cfg.Mode == ModeStepGroup || cfg.Mode == ModeTurns

	// Per-token KL, when there is a reference to compare against.
	// One block holds every record's advantages, then every KL array (the
	// records' arrays are full-capacity sub-slices of it).
	tokens := 0
	for i := range g.Trajectories {
		tokens += len(g.Trajectories[i].LossMask)
	}
	block := grow(&s.block, 2*tokens)
	clear(block) // tokens outside the model's steps keep advantage 0 and KL 0
	advBlock, klBlock := block[:tokens:tokens], block[tokens:]
	kls := make([][]float32, n)
	if cfg.KL != KLNone {
		for i := range g.Trajectories {
			t := &g.Trajectories[i]
			if len(t.RefLogprobs) == 0 {
				if cfg.KLCoef > 0 {
					return nil, st, fmt.Errorf("advantage: trajectory %s has no ref_log_prob but the KL is folded into the reward (kl coefficient %g)", t.ID, cfg.KLCoef)
				}
				continue
			}
			if len(t.RefLogprobs) != len(t.LossMask) || len(t.Logprobs) != len(t.LossMask) {
				return nil, st, fmt.Errorf("advantage: trajectory %s: ref_log_prob has %d entries, logprobs %d, response_mask %d",
					t.ID, len(t.RefLogprobs), len(t.Logprobs), len(t.LossMask))
			}
			kl := klBlock[:len(t.LossMask):len(t.LossMask)]
			klBlock = klBlock[len(t.LossMask):]
			tokenKL(cfg.KL, kl, t.Logprobs, t.RefLogprobs, t.LossMask)
			kls[i] = kl
		}
	}

	var outcome []float64 // per trajectory
	zero := true
	if useOutcome {
		outcome = make([]float64, n)
		for i := range g.Trajectories {
			outcome[i] = g.Trajectories[i].Reward.Total
		}
		zero = allEqual(outcome)
		if cfg.KLCoef > 0 {
			for i := range outcome {
				outcome[i] -= cfg.KLCoef * maskedSum(kls[i], g.Trajectories[i].LossMask, 0, len(kls[i]))
			}
		}
		Baseline(outcome, cfg.Estimator, cfg.Eps)
	}

	var process [][]float64 // per trajectory, per step (turn): the step's token advantage
	if useProcess {
		var err error
		var processZero bool
		switch cfg.Mode {
		case ModeStepGroup:
			process, processZero, err = stepGroupAdvantages(g, kls, cfg)
		case ModeTurns:
			process, processZero, err = turnAdvantages(g, kls, cfg)
		default:
			process, processZero, err = processAdvantages(g, kls, cfg)
		}
		if err != nil {
			return nil, st, err
		}
		zero = zero && processZero
	}

	if zero {
		st.ZeroVariance = 1
		if cfg.DropZeroVariance {
			st.DroppedZero = 1
			return nil, st, nil
		}
	}

	verdict := outcomeVerdicts(g, cfg.KeepOutcomeSign)
	records := grow(&s.records, n)
	nsegs := 0
	for i := range g.Trajectories {
		nsegs += len(g.Trajectories[i].Segments)
	}
	segBlock := grow(&s.spans, nsegs) // the records' spans, one block
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		adv := advBlock[:len(t.LossMask):len(t.LossMask)]
		advBlock = advBlock[len(t.LossMask):]
		step := -1
		for j, seg := range t.Segments {
			if seg.Kind != traj.SegmentModel {
				continue // injected tokens keep advantage 0
			}
			// A step is an assistant turn (traj.Trajectory.Steps): every
			// model segment of a turn of several calls gets its advantage.
			if j == 0 || t.Segments[j-1].Turn != seg.Turn {
				step++
			}
			var a float64
			if useOutcome {
				a = outcome[i]
			}
			if useProcess {
				w := 1.0
				if cfg.Mode == ModeHybrid || cfg.Mode == ModeStepGroup {
					w = cfg.ProcessWeight
				}
				// turns: the weights are in turnAdvantages' values.
				a += w * process[i][step]
			}
			switch {
			case verdict != nil && verdict[i] > 0:
				a = max(a, 0)
			case verdict != nil && verdict[i] < 0:
				a = min(a, 0)
			}
			// Every token of a model step is sampled (response_mask 1: Validate).
			fill(adv[seg.Start:seg.End], float32(a))
		}
		r := &records[i]
		*r = traj.AdvantageRecord{
			Schema: traj.AdvantageSchema, TrajectoryID: t.ID, GroupID: t.GroupID, Iteration: t.Iteration,
			SampleIndex: t.SampleIndex, PolicyVersion: t.PolicyVersion, Temperature: t.Temperature,
			InputIDs: t.Tokens, PromptLen: t.PromptLen, LossMask: t.LossMask,
			OldLogprobs: t.Logprobs, RefLogprobs: t.RefLogprobs,
			Advantages: adv, Reward: t.Reward, StepRewards: t.StepRewards,
			Segments: spans(&segBlock, t.Segments), Mode: string(cfg.Mode), Estimator: string(cfg.Estimator),
			ZeroVariance: zero, Stale: stale,
		}
		if kls[i] != nil {
			r.KL, r.KLEstimator = kls[i], string(cfg.KL)
		}
		st.Tokens += int64(len(adv))
	}
	st.Records = int64(n)
	return records, st, nil
}

// processAdvantages is process supervision as DeepSeekMath defines it (Shao et
// al. 2024, section 4.1.3): every step reward of every trajectory of the group
// is normalised against all step rewards of the group,
// r̃ = (r − mean(R)) / std(R) (here with the configured estimator and eps), and
// the advantage of a token is the sum of the normalised rewards of the steps
// that end at or after it: Â_{i,t} = Σ_{index(j) ≥ t} r̃_i^{index(j)}. A step
// is an assistant turn (traj.Trajectory.Steps: with parallel calls a turn
// is several model segments, which all get its advantage; with one call per
// turn a step is a model segment), so a token of step k gets
// Σ_{j≥k} γ^(j−k) r̃_j (γ = 1 in the paper). With KLCoef > 0 a step's reward
// first loses KLCoef × the KL summed over its tokens. It returns that
// per-step advantage for each trajectory and whether all step rewards of the
// group were equal.
func processAdvantages(g *traj.Group, kls [][]float32, cfg Config) ([][]float64, bool, error) {
	pooled, zero, err := stepRewards(g, kls, cfg)
	if err != nil {
		return nil, false, err
	}
	Baseline(pooled, cfg.Estimator, cfg.Eps)

	total := len(pooled)
	out := make([][]float64, len(g.Trajectories))
	slab := make([]float64, total) // the trajectories' per-step advantages, one allocation
	k := 0
	for i := range g.Trajectories {
		steps := len(g.Trajectories[i].StepRewards)
		norm := pooled[k : k+steps]
		adv := slab[k : k+steps : k+steps]
		k += steps
		// Suffix sums, latest step first: A_k = r̃_k + γ A_{k+1}.
		var acc float64
		for j := steps - 1; j >= 0; j-- {
			acc = norm[j] + cfg.Gamma*acc
			adv[j] = acc
		}
		out[i] = adv
	}
	return out, zero, nil
}

// stepRewards returns every step reward of the group, trajectory after
// trajectory (Trajectory.StepRewards: one per step, an assistant turn), each
// less KLCoef × the KL summed over its tokens when KLCoef > 0, and whether the
// step rewards (before the KL) are all equal.
func stepRewards(g *traj.Group, kls [][]float32, cfg Config) ([]float64, bool, error) {
	total := 0
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		if m := t.Steps(); len(t.StepRewards) != m {
			return nil, false, fmt.Errorf("advantage: trajectory %s: mode %s needs one step reward per step (assistant turn), have %d for %d steps",
				t.ID, cfg.Mode, len(t.StepRewards), m)
		}
		total += len(t.StepRewards)
	}
	pooled := make([]float64, 0, total)
	for i := range g.Trajectories {
		pooled = append(pooled, g.Trajectories[i].StepRewards...)
	}
	zero := allEqual(pooled)
	if cfg.KLCoef > 0 {
		k := 0
		for i := range g.Trajectories {
			t := &g.Trajectories[i]
			// The KL of a step is summed over all its model segments, then
			// taken from its reward once.
			kl, open := 0.0, false
			for j, seg := range t.Segments {
				if seg.Kind != traj.SegmentModel {
					continue
				}
				if open && t.Segments[j-1].Turn != seg.Turn {
					pooled[k] -= cfg.KLCoef * kl
					k++
					kl = 0
				}
				kl += maskedSum(kls[i], t.LossMask, seg.Start, seg.End)
				open = true
			}
			if open {
				pooled[k] -= cfg.KLCoef * kl
				k++
			}
		}
	}
	return pooled, zero, nil
}

// stepGroupAdvantages is GiGPO's step-level advantage (arXiv 2505.10978,
// section 3.2): the steps of the group taken from the same anchor state —
// the same prefix tokens before the step's first model segment — form a
// step group; step k of trajectory i has the return
// R_{i,k} = Σ_{j≥k} γ^(j−k) r_{i,j} (its step rewards, KL folded in as in
// the process mode), and its advantage is R_{i,k} against the returns of
// its step group (the configured estimator, as the episode advantage). A
// step alone in its state has advantage 0. Every trajectory shares the
// prompt, so the first steps form one group and, with Gamma 1, their step
// advantage is the episode advantage. It returns each trajectory's per-step
// advantages and whether all step rewards were equal.
func stepGroupAdvantages(g *traj.Group, kls [][]float32, cfg Config) ([][]float64, bool, error) {
	rewards, zero, err := stepRewards(g, kls, cfg)
	if err != nil {
		return nil, false, err
	}
	// step is step k of trajectory i, taken from the state Tokens[:start].
	type step struct{ i, k, start int }
	out := make([][]float64, len(g.Trajectories))
	returns := make([][]float64, len(g.Trajectories))
	var steps []step
	at := 0
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		n := len(t.StepRewards)
		r := rewards[at : at+n]
		at += n
		// Returns, latest step first: R_k = r_k + γ R_{k+1}.
		returns[i] = make([]float64, n)
		var acc float64
		for k := n - 1; k >= 0; k-- {
			acc = r[k] + cfg.Gamma*acc
			returns[i][k] = acc
		}
		out[i] = make([]float64, n)
		// A step begins at a turn's first model segment, as Compute counts them.
		k := 0
		for j, seg := range t.Segments {
			if seg.Kind == traj.SegmentModel && (j == 0 || t.Segments[j-1].Turn != seg.Turn) {
				steps = append(steps, step{i: i, k: k, start: t.PromptLen + seg.Start})
				k++
			}
		}
	}
	// Step groups by the prefix before the step: hashed, then compared, in
	// the order the steps come so that the result does not depend on map
	// order.
	prefix := func(st step) []int32 { return g.Trajectories[st.i].Tokens[:st.start] }
	byHash := map[uint64][]int{} // hash → indexes into groups
	var groups [][]step
	var b [4]byte
	for _, st := range steps {
		h := fnv.New64a()
		for _, id := range prefix(st) {
			binary.LittleEndian.PutUint32(b[:], uint32(id))
			h.Write(b[:])
		}
		key := h.Sum64()
		placed := false
		for _, gi := range byHash[key] {
			if slices.Equal(prefix(groups[gi][0]), prefix(st)) {
				groups[gi] = append(groups[gi], st)
				placed = true
				break
			}
		}
		if !placed {
			byHash[key] = append(byHash[key], len(groups))
			groups = append(groups, []step{st})
		}
	}
	var vals []float64
	for _, members := range groups {
		if len(members) < 2 {
			continue // alone in its state: no baseline, advantage 0
		}
		vals = vals[:0]
		for _, m := range members {
			vals = append(vals, returns[m.i][m.k])
		}
		Baseline(vals, cfg.Estimator, cfg.Eps)
		for mi, m := range members {
			out[m.i][m.k] = vals[mi]
		}
	}
	return out, zero, nil
}

// turnAdvantages is MT-GRPO's turn-level credit (arXiv 2505.11821, ModeTurns):
// per trajectory and step, Â^O_i + ProcessWeight × Â^T_{i,k} for its earlier
// steps and Â^O_i for its last. The outcome reward O_i is the last step's
// reward, the turn rewards the earlier steps' (KL folded into each step as
// in the process mode); Â^O normalises O across the group, Â^T_{i,k} the
// k-th turn rewards across the trajectories that have a k-th earlier turn.
// It returns the per-step advantages and whether all step rewards were
// equal.
func turnAdvantages(g *traj.Group, kls [][]float32, cfg Config) ([][]float64, bool, error) {
	rewards, zero, err := stepRewards(g, kls, cfg)
	if err != nil {
		return nil, false, err
	}
	n := len(g.Trajectories)
	per := make([][]float64, n) // each trajectory's step rewards
	outcome := make([]float64, n)
	maxTurns := 0
	at := 0
	for i := range g.Trajectories {
		m := len(g.Trajectories[i].StepRewards)
		per[i] = rewards[at : at+m]
		at += m
		if m > 0 {
			outcome[i] = per[i][m-1]
		}
		maxTurns = max(maxTurns, m-1)
	}
	Baseline(outcome, cfg.Estimator, cfg.Eps)
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, len(per[i]))
		for k := range out[i] {
			out[i][k] = outcome[i]
		}
	}
	var vals []float64
	var who []int
	for k := range maxTurns {
		vals, who = vals[:0], who[:0]
		for i := range per {
			if k < len(per[i])-1 {
				vals = append(vals, per[i][k])
				who = append(who, i)
			}
		}
		if len(vals) < 2 {
			continue // a turn no other trajectory has: no baseline
		}
		Baseline(vals, cfg.Estimator, cfg.Eps)
		for j, i := range who {
			out[i][k] += cfg.ProcessWeight * vals[j]
		}
	}
	return out, zero, nil
}

func maskedSum(values []float32, mask traj.Mask, start, end int) float64 {
	var s float64
	for j := start; j < end; j++ {
		if mask[j] == 1 {
			s += float64(values[j])
		}
	}
	return s
}

// fill sets every value of vs to v.
func fill(vs []float32, v float32) {
	for i := range vs {
		vs[i] = v
	}
}

// grow returns (*buf)[:n], first replacing *buf by a larger array when it
// holds fewer than n.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	return (*buf)[:n]
}

// spans copies the segments' kinds and offsets only: trainers need the step
// boundaries, not the text, calls and results (those stay in the trajectory).
// They are taken from the front of *block.
func spans(block *[]traj.Segment, segs []traj.Segment) []traj.Segment {
	if len(segs) == 0 {
		return nil
	}
	out := (*block)[:len(segs):len(segs)]
	*block = (*block)[len(segs):]
	for i, s := range segs {
		out[i] = traj.Segment{Kind: s.Kind, Turn: s.Turn, Start: s.Start, End: s.End}
	}
	return out
}

// outcomeVerdicts is, with keep (Config.KeepOutcomeSign) and a group that
// holds right and wrong answers, +1 for each right trajectory (reward part
// "outcome" positive) and −1 for each wrong one; else nil, and advantages
// are left as computed.
func outcomeVerdicts(g *traj.Group, keep bool) []int8 {
	if !keep {
		return nil
	}
	v := make([]int8, len(g.Trajectories))
	right, wrong := false, false
	for i := range g.Trajectories {
		o, ok := g.Trajectories[i].Reward.Parts["outcome"]
		if !ok {
			return nil // not scored by the staged reward: no verdict to keep
		}
		if o > 0 {
			v[i], right = 1, true
		} else {
			v[i], wrong = -1, true
		}
	}
	if !right || !wrong {
		return nil
	}
	return v
}
