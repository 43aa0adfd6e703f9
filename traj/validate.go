package traj

import (
	"encoding/binary"
	"fmt"
	"math"
)

// FieldError is a broken invariant, naming the JSON field it was found in.
type FieldError struct {
	Record string // the trajectory or record ID, when it has one
	Field  string // JSON path, e.g. "segments[2].end"
	Msg    string
}

func (e *FieldError) Error() string {
	if e.Record == "" {
		return fmt.Sprintf("field %s: %s", e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: field %s: %s", e.Record, e.Field, e.Msg)
}

func fieldErr(record, field, format string, args ...any) error {
	return &FieldError{Record: record, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks every invariant of a trajectory and returns the first broken
// one as a *FieldError: schema (v2, or v1 without temperature), a finite
// temperature ≥ 0 when set, ids, lengths of the per-response arrays, 0/1
// mask values, finite logprobs that are ≤ 0 (and 0 where the mask is 0),
// contiguous segments that cover the response with masks that match their kind,
// laid out in turns (see checkTurns), one step reward per step (turn, see
// Steps), and a finite reward. An iteration must
// be ≥ 0, and 0 in v1. It does not check that the ids follow GroupID and
// TrajectoryID (data from other producers may name groups otherwise).
func (t *Trajectory) Validate() error {
	id := t.ID
	if err := checkSchemaFields(id, t.Schema, TrajectorySchema, TrajectorySchemaV2, TrajectorySchemaV1, t.Temperature, t.Iteration); err != nil {
		return err
	}
	names := TrajectoryNames(t.Schema)
	for _, f := range []struct{ name, value string }{
		{"id", t.ID}, {"job_id", t.JobID}, {"prompt_id", t.PromptID}, {"group_id", t.GroupID},
	} {
		if f.value == "" {
			return fieldErr(id, f.name, "is empty")
		}
	}
	if t.GroupSize < 1 {
		return fieldErr(id, "group_size", "is %d, want ≥ 1", t.GroupSize)
	}
	if t.SampleIndex < 0 || t.SampleIndex >= t.GroupSize {
		return fieldErr(id, "sample_index", "is %d, want in [0, %d)", t.SampleIndex, t.GroupSize)
	}
	if len(t.Tokens) == 0 {
		return fieldErr(id, names.Tokens, "is empty")
	}
	if anyNegative(t.Tokens) {
		for i, tok := range t.Tokens {
			if tok < 0 {
				return fieldErr(id, fmt.Sprintf("%s[%d]", names.Tokens, i), "negative token id %d", tok)
			}
		}
	}
	if t.PromptLen < 1 || t.PromptLen > len(t.Tokens) {
		return fieldErr(id, "prompt_len", "is %d, want in [1, %d]", t.PromptLen, len(t.Tokens))
	}
	n := t.ResponseLen()
	if len(t.LossMask) != n {
		return fieldErr(id, names.Mask, "has %d entries, want %d (response length)", len(t.LossMask), n)
	}
	if len(t.Logprobs) != n {
		return fieldErr(id, names.Logprobs, "has %d entries, want %d (response length)", len(t.Logprobs), n)
	}
	if err := checkMask(id, names.Mask, t.LossMask); err != nil {
		return err
	}
	if err := checkLogprobs(id, names.Logprobs, t.Logprobs, t.LossMask); err != nil {
		return err
	}
	if t.RefLogprobs != nil {
		if len(t.RefLogprobs) != n {
			return fieldErr(id, names.RefLogprobs, "has %d entries, want %d (response length)", len(t.RefLogprobs), n)
		}
		if err := checkLogprobs(id, names.RefLogprobs, t.RefLogprobs, t.LossMask); err != nil {
			return err
		}
	}
	if err := checkSegments(id, t.Segments, t.LossMask, names.Mask); err != nil {
		return err
	}
	if !t.FinishReason.Valid() {
		return fieldErr(id, "finish_reason", "unknown value %q", t.FinishReason)
	}
	if err := t.Reward.validate(id, names); err != nil {
		return err
	}
	if t.StepRewards != nil {
		if want := t.Steps(); len(t.StepRewards) != want {
			return fieldErr(id, "step_rewards", "has %d entries, want %d (one per step: an assistant turn)", len(t.StepRewards), want)
		}
		for i, r := range t.StepRewards {
			if math.IsNaN(r) || math.IsInf(r, 0) {
				return fieldErr(id, fmt.Sprintf("step_rewards[%d]", i), "is not finite")
			}
		}
	}
	return nil
}

// checkSchemaFields accepts the current schema and v2 (with or without a
// temperature, which must then be finite and ≥ 0; with an iteration ≥ 0) and
// v1 (without temperature and with iteration 0: v1 has neither field).
func checkSchemaFields(id, schema, current, v2, v1 string, temperature *float64, iteration int) error {
	switch schema {
	case current, v2:
		if temperature != nil {
			if t := *temperature; math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
				return fieldErr(id, "temperature", "is %g, want a finite value ≥ 0 (0 = greedy)", t)
			}
		}
		if iteration < 0 {
			return fieldErr(id, "iteration", "is %d, want ≥ 0", iteration)
		}
	case v1:
		if temperature != nil {
			return fieldErr(id, "temperature", "is set in a %s record, which has no temperature (want %s)", v1, current)
		}
		if iteration != 0 {
			return fieldErr(id, "iteration", "is %d in a %s record, which has no iteration (want %s)", iteration, v1, current)
		}
	default:
		return fieldErr(id, "schema", "got %q, want %q (or, read only, %q or %q)", schema, current, v2, v1)
	}
	return nil
}

func (r Reward) validate(id string, names *FieldNames) error {
	if math.IsNaN(r.Total) || math.IsInf(r.Total, 0) {
		return fieldErr(id, names.Reward, "is not finite")
	}
	for name, v := range r.Parts {
		if name == "" {
			return fieldErr(id, names.RewardParts, "has an empty name")
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fieldErr(id, names.RewardParts+"."+name, "is not finite")
		}
	}
	return nil
}

func checkMask(id, field string, mask Mask) error {
	// A value > 1 sets a bit other than the lowest of its byte: OR the
	// mask eight bytes at a time, then the rest, with no branch per value.
	var or uint64
	j := 0
	for ; j+8 <= len(mask); j += 8 {
		or |= binary.LittleEndian.Uint64(mask[j:])
	}
	for ; j < len(mask); j++ {
		or |= uint64(mask[j])
	}
	if or&^0x0101010101010101 == 0 {
		return nil
	}
	for i, m := range mask {
		if m > 1 {
			return fieldErr(id, fmt.Sprintf("%s[%d]", field, i), "is %d, want 0 or 1", m)
		}
	}
	return nil
}

func checkLogprobs(id, field string, lp []float32, mask Mask) error {
	mask = mask[:len(lp)]
	// A branch-free pass over the values first (logprobsBad); only when it
	// finds one does the loop below look for the first, to name it.
	if !logprobsBad(lp, mask) {
		return nil
	}
	for i, v := range lp {
		b := math.Float32bits(v)
		if b&0x7f800000 == 0x7f800000 || v > 0 || (mask[i] == 0 && b<<1 != 0) {
			return logprobErr(id, field, i, v)
		}
	}
	return nil
}

// logprobsBadScalar is logprobsBad one value at a time, without a branch
// per value: bad gets bit 31 set by a value that is not finite (exponent
// bits all ones), > 0 (sign bit 0 and not +0), or nonzero (±0 pass) where
// the mask is 0.
func logprobsBadScalar(lp []float32, mask Mask) bool {
	mask = mask[:len(lp)]
	var bad uint32
	for i, v := range lp {
		b := math.Float32bits(v)
		nonFinite := (b & 0x7f800000) + 0x00800000 // bit 31: exponent all ones
		positive := ^b & (b | -b)                  // bit 31: sign 0 and b ≠ 0
		mag := b << 1
		injected := (mag | -mag) & (uint32(mask[i]) - 1) // bit 31: ≠ ±0 and mask 0
		bad |= nonFinite | positive | injected
	}
	return bad>>31 != 0
}

// anyNonFiniteScalar reports whether one of vs is NaN or ±Inf, without a
// branch per value: an exponent of all ones sets bit 31 of bad.
func anyNonFiniteScalar(vs []float32) bool {
	var bad uint32
	for _, v := range vs {
		bad |= (math.Float32bits(v) & 0x7f800000) + 0x00800000
	}
	return bad>>31 != 0
}

// FirstNonFinite returns the index of the first NaN or ±Inf in vs, or -1. It
// scans eight values at a time where the CPU allows and looks for the index
// only when there is one.
func FirstNonFinite(vs []float32) int {
	if !anyNonFinite(vs) {
		return -1
	}
	for i, v := range vs {
		if !finite32(v) {
			return i
		}
	}
	return -1
}

// logprobErr says why lp[i] = v failed checkLogprobs (only on error).
func logprobErr(id, field string, i int, v float32) error {
	name := fmt.Sprintf("%s[%d]", field, i)
	switch {
	case !finite32(v):
		return fieldErr(id, name, "is not finite")
	case v > 0:
		return fieldErr(id, name, "is %g, a logprob must be ≤ 0", v)
	default:
		return fieldErr(id, name, "is %g on an injected token (loss_mask 0), want 0", v)
	}
}

// finite32 reports whether v is neither infinite nor NaN: its exponent bits
// are not all ones.
func finite32(v float32) bool {
	return math.Float32bits(v)&0x7f800000 != 0x7f800000
}

func checkSegments(id string, segs []Segment, mask Mask, maskName string) error {
	n := len(mask)
	if n > 0 && len(segs) == 0 {
		return fieldErr(id, "segments", "is empty but the response has %d tokens", n)
	}
	pos := 0
	for i, s := range segs {
		f := func(field string) string { return fmt.Sprintf("segments[%d].%s", i, field) } // only on error: Validate runs per group
		if s.Kind != SegmentModel && s.Kind != SegmentTool {
			return fieldErr(id, f("kind"), "unknown kind %q", s.Kind)
		}
		if s.Start != pos {
			return fieldErr(id, f("start"), "is %d, want %d (segments must be contiguous)", s.Start, pos)
		}
		if s.End < s.Start || s.End > n {
			return fieldErr(id, f("end"), "is %d, want in [%d, %d]", s.End, s.Start, n)
		}
		if s.Turn < 0 {
			return fieldErr(id, f("turn"), "is negative")
		}
		want := uint8(0)
		if s.Kind == SegmentModel {
			want = 1
		}
		if j := maskMismatch(mask[s.Start:s.End], want); j >= 0 {
			j += s.Start
			return fieldErr(id, fmt.Sprintf("%s[%d]", maskName, j), "is %d inside %s segment %d, want %d", mask[j], s.Kind, i, want)
		}
		if s.Kind == SegmentTool && s.Result == nil {
			return fieldErr(id, f("result"), "is missing on a tool segment")
		}
		pos = s.End
	}
	if pos != n {
		return fieldErr(id, "segments", "cover %d response tokens, want %d", pos, n)
	}
	return checkTurns(id, segs)
}

// checkTurns checks the turn layout of segments (kinds already checked): an
// assistant turn that made N ≥ 1 calls is N model segments of the same Turn,
// each holding its call (segment i ends right after the token that closed
// call i; the last runs to the turn's end and holds call N), then the tool
// segments of that Turn answering them in order: tool segment i answers call
// i and, when its Call is set, repeats it exactly. A turn without calls is
// one model segment. Turns never decrease, a turn begins with a model
// segment, and only the trajectory's last turn may leave calls unanswered
// (it ended at a cap before the results were injected). A tool segment may
// omit Call (v1-era and other producers' data record the call on the model
// segment only, or not at all: a turn whose one model segment holds no call
// may then have one such tool segment); toolrl's rollout always repeats it.
// It allocates nothing unless it fails: Validate runs per group.
func checkTurns(id string, segs []Segment) error {
	first := 0  // index of the current turn's first segment
	models := 0 // model segments of the current turn
	tools := 0  // tool segments of the current turn
	for i := range segs {
		s := &segs[i]
		if i == 0 || s.Turn != segs[first].Turn {
			if i > 0 {
				if s.Turn < segs[first].Turn {
					return fieldErr(id, fmt.Sprintf("segments[%d].turn", i), "is %d after turn %d: turns never decrease", s.Turn, segs[first].Turn)
				}
				if err := checkTurnEnd(id, segs, first, models, tools, false); err != nil {
					return err
				}
			}
			if s.Kind != SegmentModel {
				return fieldErr(id, fmt.Sprintf("segments[%d].kind", i), "is %s at the start of turn %d, want model: a turn begins with the model's text", s.Kind, s.Turn)
			}
			first, models, tools = i, 1, 0
			continue
		}
		if s.Kind == SegmentModel {
			if tools > 0 {
				return fieldErr(id, fmt.Sprintf("segments[%d].turn", i), "is %d on a model segment after that turn's tool segments, want %d (the next turn)", s.Turn, s.Turn+1)
			}
			if segs[i-1].Call == nil {
				return fieldErr(id, fmt.Sprintf("segments[%d].call", i-1), "is missing, but model segment %d of the same turn %d follows: a turn's model segments but the last each end in a call", i, s.Turn)
			}
			models++
			continue
		}
		// A tool segment: it answers the turn's call number tools, held by
		// model segment first+tools (one call per model segment).
		j := first + tools
		calls := models
		if models == 1 && segs[first].Call == nil {
			calls = 0
			if tools == 0 {
				tools++ // the call-less one-call-per-turn layout
				continue
			}
		}
		if tools >= calls {
			return fieldErr(id, fmt.Sprintf("segments[%d]", i), "is tool segment %d of turn %d, which made %d call(s): one tool segment per call", tools+1, s.Turn, max(calls, 1))
		}
		// With one call in the turn there is nothing to pair wrongly, and
		// data written before parallel calls (the v1 fixtures included) may
		// repeat a different call there: compared from two calls on.
		if calls > 1 && s.Call != nil && !s.Call.Equal(segs[j].Call) {
			return fieldErr(id, fmt.Sprintf("segments[%d].call", i), "is %s, but the call it answers (segments[%d].call, call %d of turn %d) is %s",
				s.Call.describe(), j, tools+1, s.Turn, segs[j].Call.describe())
		}
		tools++
	}
	if len(segs) == 0 {
		return nil
	}
	return checkTurnEnd(id, segs, first, models, tools, true)
}

// checkTurnEnd checks the turn whose segments begin at first and hold models
// model and tools tool segments, once it is over: with more than one model
// segment, the last holds a call too, and every call is answered unless the
// turn is the trajectory's last.
func checkTurnEnd(id string, segs []Segment, first, models, tools int, last bool) error {
	lastModel := first + models - 1
	if models > 1 && segs[lastModel].Call == nil {
		return fieldErr(id, fmt.Sprintf("segments[%d].call", lastModel), "is missing: turn %d has %d model segments, one per call, so the last holds a call too", segs[first].Turn, models)
	}
	calls := models
	if models == 1 && segs[first].Call == nil {
		calls = 0
	}
	if !last && tools < calls {
		j := first + tools
		return fieldErr(id, fmt.Sprintf("segments[%d].call", j), "%s (call %d of turn %d) has no tool segment, but turn %d follows: only the last turn may leave calls unanswered",
			segs[j].Call.describe(), tools+1, segs[first].Turn, segs[first+models+tools].Turn)
	}
	return nil
}

// anyNegative reports whether one of ids is negative: their OR has the
// sign bit, with no branch per id. (Reading two ids as one uint64 saved 1%
// of the service's decode but needs an unsafe view, which -race's checkptr
// refused on a Parquet reader's unaligned ids.)
func anyNegative(ids []int32) bool {
	var or int32
	for _, id := range ids {
		or |= id
	}
	return or < 0
}

// maskMismatch returns the index of the first value of mask that is not
// want, or -1: eight values at a time, then one by one.
func maskMismatch(mask Mask, want uint8) int {
	w := uint64(want) * 0x0101010101010101
	j := 0
	for ; j+8 <= len(mask); j += 8 {
		if binary.LittleEndian.Uint64(mask[j:]) != w {
			break
		}
	}
	for ; j < len(mask); j++ {
		if mask[j] != want {
			return j
		}
	}
	return -1
}

// Validate checks every trajectory of the group and that they belong together:
// same group_id and iteration, distinct sample indexes, and a group_size
// that matches. The group's schema is v3, v2 or v1, and its trajectories'
// the same or older (older data regrouped by a newer writer): a v1 group
// holds only v1 trajectories and has iteration 0.
func (g *Group) Validate() error {
	if err := checkSchemaFields(g.GroupID, g.Schema, TrajectorySchema, TrajectorySchemaV2, TrajectorySchemaV1, nil, g.Iteration); err != nil {
		return err
	}
	if g.GroupID == "" {
		return fieldErr("", "group_id", "is empty")
	}
	if len(g.Trajectories) == 0 {
		return fieldErr(g.GroupID, "trajectories", "is empty")
	}
	// Sample indexes are in [0, group_size) (Trajectory.Validate), and
	// group_size is the number of trajectories once checked below.
	var seenArr [64]bool
	seen := seenArr[:]
	if len(g.Trajectories) > len(seenArr) {
		seen = make([]bool, len(g.Trajectories))
	}
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		if err := t.Validate(); err != nil {
			return fmt.Errorf("group %s trajectories[%d]: %w", g.GroupID, i, err)
		}
		if err := t.checkInGroup(g, i, seen); err != nil {
			return err
		}
	}
	return nil
}

// trajectoryRank orders the trajectory schema versions (0: unknown, which
// Validate refuses before).
func trajectoryRank(schema string) int {
	switch schema {
	case TrajectorySchemaV1:
		return 1
	case TrajectorySchemaV2:
		return 2
	case TrajectorySchema:
		return 3
	}
	return 0
}

// checkInGroup checks that t, the group's i-th trajectory, belongs to it;
// seen marks the sample indexes met so far (t's is in [0, len(seen)) once
// its group_size matches). The field name is built only on error.
func (t *Trajectory) checkInGroup(g *Group, i int, seen []bool) error {
	f := func() string { return fmt.Sprintf("trajectories[%d]", i) }
	if trajectoryRank(t.Schema) > trajectoryRank(g.Schema) {
		return fieldErr(g.GroupID, f()+".schema", "is %q in a %s group, want that version or an older one", t.Schema, g.Schema)
	}
	if t.GroupID != g.GroupID {
		return fieldErr(g.GroupID, f()+".group_id", "is %q, want the group's %q", t.GroupID, g.GroupID)
	}
	if t.Iteration != g.Iteration {
		return fieldErr(g.GroupID, f()+".iteration", "is %d, want the group's %d", t.Iteration, g.Iteration)
	}
	if t.GroupSize != len(g.Trajectories) {
		return fieldErr(g.GroupID, f()+".group_size", "is %d but the group holds %d trajectories", t.GroupSize, len(g.Trajectories))
	}
	if seen[t.SampleIndex] {
		return fieldErr(g.GroupID, f()+".sample_index", "%d appears twice", t.SampleIndex)
	}
	seen[t.SampleIndex] = true
	return nil
}

// Validate checks an advantage record's invariants: schema (v2, or v1 without
// temperature and with iteration 0), a finite temperature ≥ 0 when set, an
// iteration ≥ 0, ids, per-response array lengths, 0/1 mask, finite values,
// and advantage 0 on injected tokens.
func (r *AdvantageRecord) Validate() error {
	id := r.TrajectoryID
	if err := checkSchemaFields(id, r.Schema, AdvantageSchema, AdvantageSchemaV2, AdvantageSchemaV1, r.Temperature, r.Iteration); err != nil {
		return err
	}
	names := AdvantageNames(r.Schema)
	if r.TrajectoryID == "" {
		return fieldErr(id, "trajectory_id", "is empty")
	}
	if r.GroupID == "" {
		return fieldErr(id, "group_id", "is empty")
	}
	if len(r.InputIDs) == 0 {
		return fieldErr(id, "input_ids", "is empty")
	}
	if r.PromptLen < 1 || r.PromptLen > len(r.InputIDs) {
		return fieldErr(id, "prompt_len", "is %d, want in [1, %d]", r.PromptLen, len(r.InputIDs))
	}
	n := len(r.InputIDs) - r.PromptLen
	arrays := []struct {
		name     string
		length   int
		optional bool
	}{
		{names.Mask, len(r.LossMask), false},
		{names.Logprobs, len(r.OldLogprobs), false},
		{"advantages", len(r.Advantages), false},
		{names.RefLogprobs, len(r.RefLogprobs), true},
		{"kl", len(r.KL), true},
	}
	for _, a := range arrays {
		if a.optional && a.length == 0 {
			continue
		}
		if a.length != n {
			return fieldErr(id, a.name, "has %d entries, want %d (response length)", a.length, n)
		}
	}
	if err := checkMask(id, names.Mask, r.LossMask); err != nil {
		return err
	}
	if err := checkLogprobs(id, names.Logprobs, r.OldLogprobs, r.LossMask); err != nil {
		return err
	}
	if len(r.RefLogprobs) > 0 {
		if err := checkLogprobs(id, names.RefLogprobs, r.RefLogprobs, r.LossMask); err != nil {
			return err
		}
	}
	for i, a := range r.Advantages {
		if !finite32(a) {
			return fieldErr(id, fmt.Sprintf("advantages[%d]", i), "is not finite")
		}
		if r.LossMask[i] == 0 && a != 0 {
			return fieldErr(id, fmt.Sprintf("advantages[%d]", i), "is %g on an injected token (%s 0), want 0", a, names.Mask)
		}
	}
	for i, k := range r.KL {
		if !finite32(k) {
			return fieldErr(id, fmt.Sprintf("kl[%d]", i), "is not finite")
		}
	}
	return r.Reward.validate(id, names)
}

// MaxRewardMagnitude bounds |reward.total| for ValidateRewardSums: no reward
// toolrl writes comes near it, so a larger total is corrupt input.
const MaxRewardMagnitude = 1e6

// rewardSumTolerance is the relative tolerance of ValidateRewardSums: the
// rollout rounds totals to 12 digits and sums in float64, so an honest total
// differs from its parts' sum by far less.
const rewardSumTolerance = 1e-9

// ValidateRewardSums checks that a trajectory's reward is one a producer
// meant, which Validate (finite values only) does not: reward.total is finite
// with |total| ≤ MaxRewardMagnitude and equals, within a relative 1e-9 (of
// the largest magnitude involved, at least 1), the sum of reward.parts when
// the reward has parts, and the sum of step_rewards when there are step
// rewards. toolrl's rollout writes rewards so (orchestrator.reward.Config.Score:
// each part is paid to a step, and the total is the sum of the steps); a
// process-mode advantage computed from step rewards that do not add up to the
// outcome would train on two different rewards. It returns a *FieldError.
func (t *Trajectory) ValidateRewardSums() error {
	total := t.Reward.Total
	names := TrajectoryNames(t.Schema)
	if math.IsNaN(total) || math.IsInf(total, 0) || math.Abs(total) > MaxRewardMagnitude {
		return fieldErr(t.ID, names.Reward, "is %g, want a finite value with magnitude ≤ %g", total, MaxRewardMagnitude)
	}
	// Plain loops, not iterators: the iterators' closures escaped to the
	// heap, an allocation per trajectory the service decodes.
	var parts sumAcc
	for _, v := range t.Reward.Parts {
		parts.add(v)
	}
	if sum, ok := parts.sumsTo(total); !ok {
		return fieldErr(t.ID, names.Reward, "is %g but %s sum to %g", total, names.RewardParts, sum)
	}
	var steps sumAcc
	for _, v := range t.StepRewards {
		steps.add(v)
	}
	if sum, ok := steps.sumsTo(total); !ok {
		return fieldErr(t.ID, names.Reward, "is %g but step_rewards sum to %g", total, sum)
	}
	return nil
}

// sumAcc sums values in order, keeping their largest magnitude and count.
type sumAcc struct {
	sum, scale float64
	n          int
}

func (a *sumAcc) add(v float64) {
	a.sum += v
	a.scale = max(a.scale, math.Abs(v))
	a.n++
}

// sumsTo reports whether the values (none: trivially) sum to total within
// rewardSumTolerance (of the largest magnitude involved, at least 1), and
// their sum.
func (a *sumAcc) sumsTo(total float64) (float64, bool) {
	scale := max(1, math.Abs(total), a.scale)
	return a.sum, a.n == 0 || math.Abs(a.sum-total) <= rewardSumTolerance*scale
}
