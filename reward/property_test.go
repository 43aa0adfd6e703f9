package reward

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

// The reward space: every trajectory of 0..3 calls, each call ok with its
// result used, ok with it unused, failed (tool_error), timed out, rejected by
// the tool (invalid_args) or failed to parse (schema); the answer right or
// wrong; the answer marked ("The answer is N." at EOS) or not. The property
// tests below score all of it with the default Config.

type callStatus int

const (
	callOKUsed callStatus = iota
	callOKUnused
	callFailed
	callTimeout
	callInvalidArgs
	callInvalidParse
	numCallStatuses
)

func (s callStatus) String() string {
	return [...]string{"ok-used", "ok-unused", "failed", "timeout", "invalid_args", "invalid_parse"}[s]
}

func (s callStatus) ok() bool { return s == callOKUsed || s == callOKUnused }

// rewardCase is one point of the reward space.
type rewardCase struct {
	calls         []callStatus
	right, marked bool
}

func (c rewardCase) String() string {
	return fmt.Sprintf("calls %v right %v marked %v", c.calls, c.right, c.marked)
}

const rewardSpaceAnswer = "42"

// trajectory builds the case's segments: call i is written by model segment
// i and answered by the tool segment after it; a used result is quoted at the
// start of the next model segment; the last model segment holds the answer.
func (c rewardCase) trajectory() traj.Trajectory {
	var segs []traj.Segment
	quote := ""
	for i, st := range c.calls {
		value := fmt.Sprint(7001 + i) // never the answer, never another call's value
		raw := fmt.Sprintf("[CALC: 7000+%d]", i+1)
		call := &traj.ToolCall{Name: "calculator", Arguments: []byte(`{"expression":"7000+1"}`), Raw: raw}
		var res *traj.ToolResult
		switch st {
		case callOKUsed, callOKUnused:
			res = &traj.ToolResult{OK: true, Content: value}
		case callFailed:
			res = &traj.ToolResult{ErrorClass: tools.ClassToolError, Content: "error: tool_error: division by zero"}
		case callTimeout:
			res = &traj.ToolResult{ErrorClass: tools.ClassTimeout, Content: "error: timeout: calculator did not finish within 3s"}
		case callInvalidArgs:
			call.Raw = "[CALC: seven thousand]"
			res = &traj.ToolResult{ErrorClass: tools.ClassInvalidArgs, Content: "error: invalid_args: syntax error"}
		case callInvalidParse:
			call.ParseError = "schema: missing property expression"
			res = &traj.ToolResult{ErrorClass: tools.ClassSchema, Content: "error: schema: missing property expression"}
		}
		segs = append(segs,
			traj.Segment{Kind: traj.SegmentModel, Turn: i, Text: quote + "then " + call.Raw, Call: call},
			traj.Segment{Kind: traj.SegmentTool, Turn: i, Text: " = " + res.Content, Call: call, Result: res})
		quote = ""
		if st == callOKUsed {
			quote = " with " + value + ","
		}
	}
	answer := "41"
	if c.right {
		answer = rewardSpaceAnswer
	}
	text := quote + " so " + answer
	if c.marked {
		text = quote + " The answer is " + answer + "."
	}
	segs = append(segs, traj.Segment{Kind: traj.SegmentModel, Turn: len(c.calls), Text: text})
	return traj.Trajectory{Segments: segs, FinishReason: traj.FinishStop}
}

type scoredCase struct {
	rewardCase
	t traj.Trajectory
}

func (s scoredCase) total() float64 { return s.t.Reward.Total }

// rewardSpace scores every case of the space with c.
func rewardSpace(t *testing.T, c Config) []scoredCase {
	t.Helper()
	var seqs [][]callStatus
	var grow func(prefix []callStatus)
	grow = func(prefix []callStatus) {
		seqs = append(seqs, prefix)
		if len(prefix) == 3 {
			return
		}
		for s := callStatus(0); s < numCallStatuses; s++ {
			grow(append(append([]callStatus(nil), prefix...), s))
		}
	}
	grow(nil)
	var out []scoredCase
	for _, calls := range seqs {
		for _, right := range []bool{false, true} {
			for _, marked := range []bool{false, true} {
				rc := rewardCase{calls: calls, right: right, marked: marked}
				tr := rc.trajectory()
				if got := c.Score(&tr, rewardSpaceAnswer); got != right {
					t.Fatalf("%v: scored correct=%v", rc, got)
				}
				out = append(out, scoredCase{rc, tr})
			}
		}
	}
	if len(out) != 4*(1+6+36+216) {
		t.Fatalf("%d cases", len(out))
	}
	return out
}

// spaceIndex finds a case's score by its description.
func spaceIndex(space []scoredCase) map[string]scoredCase {
	m := make(map[string]scoredCase, len(space))
	for _, s := range space {
		m[s.String()] = s
	}
	return m
}

func withCalls(c rewardCase, calls []callStatus) rewardCase {
	c.calls = calls
	return c
}

// (a) A call nets a reward only through a right final answer: with the
// answer wrong, every call lowers the total (removing any one raises it);
// with it right, k calls score below the right direct answer by 0.1 per call
// when they all succeed, by more when some do not.
func TestRewardDefaultsCallPaysOnlyThroughRightAnswer(t *testing.T) {
	space := rewardSpace(t, defaultRewards(t))
	idx := spaceIndex(space)
	for _, s := range space {
		k := len(s.calls)
		if k == 0 {
			continue
		}
		direct := idx[withCalls(s.rewardCase, nil).String()]
		if !s.right {
			for i := range s.calls {
				less := append(append([]callStatus(nil), s.calls[:i]...), s.calls[i+1:]...)
				without := idx[withCalls(s.rewardCase, less).String()]
				if !(s.total() < without.total()-1e-9) {
					t.Errorf("%v: total %v, not below %v without call %d", s, s.total(), without.total(), i)
				}
			}
			continue
		}
		gap := direct.total() - s.total()
		if gap < 0.1*float64(k)-1e-9 {
			t.Errorf("%v: total %v, only %v below the direct answer's %v", s, s.total(), gap, direct.total())
		}
		allOK := true
		for _, st := range s.calls {
			allOK = allOK && st.ok()
		}
		if allOK && math.Abs(gap-0.1*float64(k)) > 1e-9 {
			t.Errorf("%v: %d ok calls cost %v, want %v", s, k, gap, 0.1*float64(k))
		}
	}
}

// (b) A right answer never scores below a wrong one, whatever the calls of
// either (no sign reversal): the least right total is above the greatest
// wrong total. Past the space (a fourth call over the cap) the clip keeps it so.
func TestRewardDefaultsRightAlwaysAboveWrong(t *testing.T) {
	c := defaultRewards(t)
	space := rewardSpace(t, c)
	minRight, maxWrong := math.Inf(1), math.Inf(-1)
	var worstRight, bestWrong scoredCase
	for _, s := range space {
		if s.right && s.total() < minRight {
			minRight, worstRight = s.total(), s
		}
		if !s.right && s.total() > maxWrong {
			maxWrong, bestWrong = s.total(), s
		}
	}
	if !(minRight > maxWrong) {
		t.Fatalf("sign reversal: right %v scores %v, wrong %v scores %v", worstRight, minRight, bestWrong, maxWrong)
	}
	if math.Abs(minRight-0.2) > 1e-9 || math.Abs(maxWrong-0.1) > 1e-9 {
		t.Errorf("least right %v (%v), greatest wrong %v (%v); want 0.2 and 0.1", minRight, worstRight, maxWrong, bestWrong)
	}

	// Four calls, the last over the cap: -1.3 of tool parts, clipped to -0.8.
	tr := rewardCase{calls: []callStatus{callFailed, callTimeout, callInvalidArgs}, right: true, marked: true}.trajectory()
	over := &traj.ToolCall{Name: "calculator", Raw: "[CALC: 1+1]", ParseError: "over_cap: the trajectory's 3 calls are spent"}
	last := tr.Segments[len(tr.Segments)-1]
	last.Text, last.Call = " then [CALC: 1+1]", over
	tr.Segments = append(tr.Segments[:len(tr.Segments)-1], last,
		traj.Segment{Kind: traj.SegmentTool, Turn: 3, Call: over, Result: &traj.ToolResult{ErrorClass: tools.ClassOverCap}},
		traj.Segment{Kind: traj.SegmentModel, Turn: 4, Text: " The answer is 42."})
	if !c.Score(&tr, rewardSpaceAnswer) {
		t.Fatal("not correct")
	}
	if math.Abs(tr.Reward.Total-0.2) > 1e-12 || math.Abs(tr.Reward.Parts[PartPenaltyClip]-0.5) > 1e-12 {
		t.Errorf("clipped: total %v, penalty_clip %v; want 0.2 and 0.5", tr.Reward.Total, tr.Reward.Parts[PartPenaltyClip])
	}
	if c.Score(&tr, "43") {
		t.Fatal("43 accepted for 42")
	}
	if tr.Reward.Parts[PartPenaltyClip] != 0 || math.Abs(tr.Reward.Total+1.3) > 1e-12 {
		t.Errorf("a wrong answer is not clipped: total %v, penalty_clip %v", tr.Reward.Total, tr.Reward.Parts[PartPenaltyClip])
	}
}

// (c) A call that fails or times out scores below the same call succeeding,
// through its own part tool_failure (-0.2 per call); (d) a call the tool
// rejects (invalid_args) or that does not parse is an invalid call
// (invalid_call, -0.2 per call).
func TestRewardDefaultsFailedCallBelowSuccessfulCall(t *testing.T) {
	space := rewardSpace(t, defaultRewards(t))
	idx := spaceIndex(space)
	for _, s := range space {
		count := map[callStatus]int{}
		for _, st := range s.calls {
			count[st]++
		}
		p := s.t.Reward.Parts
		if want := -0.2 * float64(count[callFailed]+count[callTimeout]); math.Abs(p[PartToolFailure]-want) > 1e-9 {
			t.Errorf("%v: tool_failure %v, want %v", s, p[PartToolFailure], want)
		}
		if want := -0.2 * float64(count[callInvalidArgs]+count[callInvalidParse]); math.Abs(p[PartInvalidCall]-want) > 1e-9 {
			t.Errorf("%v: invalid_call %v, want %v", s, p[PartInvalidCall], want)
		}
		if want := -0.1 * float64(len(s.calls)); math.Abs(p[PartCallCost]-want) > 1e-9 {
			t.Errorf("%v: call_cost %v, want %v", s, p[PartCallCost], want)
		}
		for i, st := range s.calls {
			if !st.ok() {
				continue
			}
			for _, bad := range []callStatus{callFailed, callTimeout} {
				calls := append([]callStatus(nil), s.calls...)
				calls[i] = bad
				worse := idx[withCalls(s.rewardCase, calls).String()]
				if !(worse.total() < s.total()-1e-9) {
					t.Errorf("%v: call %d %v scores %v, not below %v when %v", s, i, bad, worse.total(), s.total(), st)
				}
			}
		}
	}
}

// (e) "Result used" counts exactly the calls whose value the later model
// text quotes; an ok call whose result is never quoted is not credited,
// though the answer sentence follows it.
func TestRewardDefaultsResultUsedOnlyWhenUsed(t *testing.T) {
	for _, s := range rewardSpace(t, defaultRewards(t)) {
		want := 0
		for _, st := range s.calls {
			if st == callOKUsed {
				want++
			}
		}
		if got := ComputeToolRewards(s.t.Segments, DefaultToolWeights()).Used; got != want {
			t.Errorf("%v: %d results used, want %d", s, got, want)
		}
	}
}

// Every part lands on the step that earned it: call i's parts on model
// segment i, outcome, format and penalty_clip on the last; the steps sum to
// the total, and so do the parts.
func TestRewardStepsLandWhereEarned(t *testing.T) {
	c := defaultRewards(t)
	c.ToolSuccess, c.ToolUse = setting.Of[float64](0.05), setting.Of[float64](0.07) // visible on their steps too
	for _, s := range rewardSpace(t, c) {
		r := s.t.Reward
		if len(s.t.StepRewards) != len(s.calls)+1 {
			t.Fatalf("%v: %d step rewards", s, len(s.t.StepRewards))
		}
		sum := 0.0
		for _, v := range s.t.StepRewards {
			sum += v
		}
		if math.Abs(sum-r.Total) > 1e-9 {
			t.Errorf("%v: steps %v sum to %v, total %v", s, s.t.StepRewards, sum, r.Total)
		}
		partSum := 0.0
		for _, v := range r.Parts {
			partSum += v
		}
		if math.Abs(partSum-r.Total) > 1e-9 {
			t.Errorf("%v: parts %v sum to %v, total %v", s, r.Parts, partSum, r.Total)
		}
		for i, st := range s.calls {
			want := -0.1
			switch st {
			case callOKUsed:
				want += 0.05 + 0.07
			case callOKUnused:
				want += 0.05
			default:
				want -= 0.2
			}
			if math.Abs(s.t.StepRewards[i]-want) > 1e-9 {
				t.Errorf("%v: step %d = %v, want the call's %v", s, i, s.t.StepRewards[i], want)
			}
		}
		last := r.Parts[PartOutcome] + r.Parts[PartFormat] + r.Parts[PartPenaltyClip]
		if got := s.t.StepRewards[len(s.calls)]; math.Abs(got-last) > 1e-9 {
			t.Errorf("%v: last step %v, want outcome + format + penalty_clip = %v", s, got, last)
		}
	}
}

// A config that sets weights keeps them: the old defaults written out score
// as they did (and the parts they did not know are the new defaults).
func TestRewardExplicitWeightsKeepTheirMeaning(t *testing.T) {
	var c Config
	doc := "tool_success: 0.1\ntool_use: 0.2\ncall_cost: -0.1\ninvalid_call: -0.2\nover_cap: -0.3\n"
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	tr := rewardCase{calls: []callStatus{callOKUsed}, right: true, marked: true}.trajectory()
	c.Score(&tr, rewardSpaceAnswer)
	if math.Abs(tr.Reward.Total-1.3) > 1e-12 {
		t.Errorf("old weights: total %v, want 1 + 0.1 + 0.1 + 0.2 - 0.1 = 1.3", tr.Reward.Total)
	}
	if c.ToolFailure.Get() != -0.2 || c.MaxToolPenalty.Get() != DefaultMaxToolPenalty {
		t.Errorf("unset parts: tool_failure %v, max_tool_penalty %v", c.ToolFailure.Get(), c.MaxToolPenalty.Get())
	}
	bad := Config{MaxToolPenalty: setting.Of[float64](-1)}
	if err := bad.Normalize(); err == nil {
		t.Error("negative max_tool_penalty accepted")
	}
}

// The table of docs/rollout.md ("What the defaults give").
func TestRewardDefaultsTable(t *testing.T) {
	c := defaultRewards(t)
	ok, failed := callOKUnused, callFailed
	for _, row := range []struct {
		rc   rewardCase
		want float64
	}{
		{rewardCase{right: true, marked: true}, 1.1},
		{rewardCase{calls: []callStatus{ok}, right: true, marked: true}, 1.0},
		{rewardCase{calls: []callStatus{callOKUsed}, right: true, marked: true}, 1.0},
		{rewardCase{calls: []callStatus{ok, ok, ok}, right: true, marked: true}, 0.8},
		{rewardCase{calls: []callStatus{callTimeout}, right: true, marked: true}, 0.8},
		{rewardCase{calls: []callStatus{failed, failed, failed}, right: true}, 0.2},
		{rewardCase{marked: true}, 0.1},
		{rewardCase{calls: []callStatus{ok}, marked: true}, 0.0},
	} {
		tr := row.rc.trajectory()
		c.Score(&tr, rewardSpaceAnswer)
		if math.Abs(tr.Reward.Total-row.want) > 1e-12 {
			t.Errorf("%v: total %v, want %v", row.rc, tr.Reward.Total, row.want)
		}
	}
}

// PartNames holds every part Score writes (a rollout's Parquet sink makes a
// column of each before it sees them): over the whole reward space, with
// every weight visible and the penalty clip reachable.
func TestPartNamesCoverScore(t *testing.T) {
	c := defaultRewards(t)
	c.ToolSuccess, c.ToolUse, c.MaxToolPenalty = setting.Of[float64](0.05), setting.Of[float64](0.07), setting.Of[float64](0.1)
	known := map[string]bool{}
	for _, p := range PartNames() {
		known[p] = true
	}
	seen := map[string]bool{}
	for _, s := range rewardSpace(t, c) {
		for p := range s.t.Reward.Parts {
			seen[p] = true
			if !known[p] {
				t.Fatalf("%v: part %q is not in PartNames %v", s, p, PartNames())
			}
		}
	}
	if len(seen) != len(known) {
		t.Errorf("the reward space writes %d parts, PartNames lists %d: %v", len(seen), len(known), PartNames())
	}
}
