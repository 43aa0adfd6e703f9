package wire

import (
	"fmt"
	"slices"

	json "github.com/goccy/go-json"

	"github.com/toolrl/toolrl/traj"
)

// The JSON names the decoder knows for each traj type, in traj's order (a
// test checks them against the types: a field added there must be decoded
// here, or every group carrying it would be refused).
var (
	modelFields   = []string{"name", "hash", "quantization"}
	segmentFields = []string{"kind", "turn", "start", "end", "text", "call", "result"}
	callFields    = []string{"name", "arguments", "raw", "parse_error"}
	resultFields  = []string{"ok", "error_class", "error", "content", "latency_ms", "truncated", "fault"}
	rewardFields  = []string{"reward", "reward_parts"}

	groupFields      = []string{"schema", "group_id", "job_id", "prompt_id", "iteration", "policy_version", "trajectories"}
	trajectoryFields = []string{"schema", "id", "job_id", "prompt_id", "iteration", "group_id", "group_size", "sample_index",
		"policy_version", "seed", "temperature", "model", "input_ids", "prompt_len", "response_mask", "rollout_log_probs", "ref_log_prob",
		"segments", "finish_reason", "reward", "reward_parts", "step_rewards", "answer", "meta"}
	// trajectoryKeys are the keys a trajectory may have: trajectoryFields
	// and the v1/v2 names of the fields v3 renamed ("reward" is both: a
	// number in v3, an object {"total", "parts"} before).
	trajectoryKeys = append(slices.Clip(trajectoryFields), "tokens", "loss_mask", "logprobs", "ref_logprobs")
	// oldRewardFields are the members of the v1/v2 reward object.
	oldRewardFields = []string{"total", "parts"}
)

// The renamed fields, as bits of spelling's masks.
const (
	renamedTokens = 1 << iota
	renamedMask
	renamedLogprobs
	renamedRef
	renamedReward
	renamedParts
)

// spelling tracks which renamed fields (renamed* bits) a record spelled the
// v1/v2 way and which the v3 way, to check them against its schema once the
// whole record was read: a v3 record must not use an old name, and no
// record may spell one field both ways. v1 and v2 records may use either
// spelling: toolrl writes records it read in v1 or v2 with v3's names, and
// keeps their schema (its meaning: v1 has no temperature).
type spelling struct{ old, v3 uint8 }

// check returns the error for a record of the given schema (current: the
// v3 string) whose old and v3 names are names.
func (sp spelling) check(schema, current string, old, v3 *traj.FieldNames) error {
	field := func(mask uint8, n *traj.FieldNames) string {
		for _, f := range []struct {
			bit  uint8
			name string
		}{{renamedTokens, n.Tokens}, {renamedMask, n.Mask}, {renamedLogprobs, n.Logprobs}, {renamedRef, n.RefLogprobs},
			{renamedReward, n.Reward}, {renamedParts, n.RewardParts}} {
			if mask&f.bit != 0 {
				return f.name
			}
		}
		return ""
	}
	if both := sp.old & sp.v3; both != 0 {
		return fmt.Errorf("%s: both %q and %q, the v1/v2 and the v3 name of one field", field(both, v3), field(both, old), field(both, v3))
	}
	if schema == current && sp.old != 0 {
		return fmt.Errorf("%s: a %s record spells it %q (%q is its name before v3)", field(sp.old, old), current, field(sp.old, v3), field(sp.old, old))
	}
	return nil
}

// Arrays are the raw JSON of one trajectory's per-token arrays, as
// DecodeGroupArrays found them (views into its input), for AppendRecord to
// copy into the trajectory's advantage record without formatting them again.
// A nil field is formatted from the record's values instead.
type Arrays struct {
	Tokens, LossMask, Logprobs, RefLogprobs []byte
}

// EncodeGroup is the JSON of g, one line (no trailing newline): the groups
// stream's payload and a JSONL line. It does not validate; callers validate
// what they did not build.
func EncodeGroup(g *traj.Group) ([]byte, error) {
	data, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("encode group %s: %w", g.GroupID, err)
	}
	return data, nil
}

// EncodeTrajectory is the JSON of t, one line (no trailing newline). It does
// not validate.
func EncodeTrajectory(t *traj.Trajectory) ([]byte, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode trajectory %s: %w", t.ID, err)
	}
	return data, nil
}

// DecodeGroup decodes one JSON group strictly and validates it
// (traj.Group.Validate: schema v2 and v1 are accepted). An error names the
// group's id when it was read, and the field at fault.
func DecodeGroup(data []byte) (traj.Group, error) {
	g, _, err := DecodeGroupArrays(data)
	if err != nil {
		return traj.Group{}, err
	}
	return *g, nil
}

// DecodeGroupArrays is DecodeGroup that also returns each trajectory's raw
// per-token arrays, which view data: data must not change while they are in
// use.
func DecodeGroupArrays(data []byte) (*traj.Group, []Arrays, error) {
	g, raws, err := decodeGroupJSON(data, 0)
	if err != nil {
		if g.GroupID != "" {
			return nil, nil, fmt.Errorf("decode group %s: %w", g.GroupID, err)
		}
		return nil, nil, fmt.Errorf("decode group: %w", err)
	}
	if err := g.Validate(); err != nil {
		return nil, nil, fmt.Errorf("decode group: %w", err)
	}
	return g, raws, nil
}

// decodeGroupJSON decodes one JSON group strictly without validating it
// (groupHint > 0: the number of trajectories expected, to size the slices).
// The
// group is returned with an error too, for the error to name its id when it
// was read.
func decodeGroupJSON(data []byte, groupHint int) (*traj.Group, []Arrays, error) {
	s := &scanner{b: data, groupHint: groupHint}
	g := &traj.Group{}
	var raws []Arrays
	err := s.object(groupFields, func(key string) error {
		var err error
		switch key {
		case "schema":
			g.Schema, err = s.str()
		case "group_id":
			g.GroupID, err = s.str()
		case "job_id":
			g.JobID, err = s.str()
		case "prompt_id":
			g.PromptID, err = s.str()
		case "iteration":
			g.Iteration, err = s.int()
		case "policy_version":
			g.PolicyVersion, err = s.int64()
		case "trajectories":
			g.Trajectories, raws = nil, nil
			if s.null() {
				return nil
			}
			if s.groupHint > 0 {
				g.Trajectories, raws = make([]traj.Trajectory, 0, s.groupHint), make([]Arrays, 0, s.groupHint)
			}
			err = s.array(func(i int) error {
				g.Trajectories = append(g.Trajectories, traj.Trajectory{})
				raws = append(raws, Arrays{})
				if err := s.trajectory(&g.Trajectories[i], &raws[i]); err != nil {
					if id := g.Trajectories[i].ID; id != "" {
						return fmt.Errorf("trajectories[%d] (%s): %w", i, id, err)
					}
					return fmt.Errorf("trajectories[%d]: %w", i, err)
				}
				return nil
			})
		}
		if err != nil && key != "trajectories" {
			return fmt.Errorf("%s: %w", key, err)
		}
		return err
	})
	if err == nil {
		err = s.end()
	}
	return g, raws, err
}

// DecodeTrajectory decodes one JSON trajectory strictly and validates it
// (traj.Trajectory.Validate). An error names the trajectory's id when it was
// read, and the field at fault.
func DecodeTrajectory(data []byte) (traj.Trajectory, error) {
	s := &scanner{b: data}
	var t traj.Trajectory
	err := s.trajectory(&t, &Arrays{})
	if err == nil {
		err = s.end()
	}
	if err != nil {
		if t.ID != "" {
			return traj.Trajectory{}, fmt.Errorf("decode trajectory %s: %w", t.ID, err)
		}
		return traj.Trajectory{}, fmt.Errorf("decode trajectory: %w", err)
	}
	if err := t.Validate(); err != nil {
		return traj.Trajectory{}, fmt.Errorf("decode trajectory: %w", err)
	}
	return t, nil
}

// trajectory decodes one trajectory object into t and raw, in either
// spelling (see spelling).
func (s *scanner) trajectory(t *traj.Trajectory, raw *Arrays) error {
	var sp spelling
	err := s.object(trajectoryKeys, func(key string) error {
		var err error
		switch key {
		case "schema":
			t.Schema, err = s.str()
		case "id":
			t.ID, err = s.str()
		case "job_id":
			t.JobID, err = s.str()
		case "prompt_id":
			t.PromptID, err = s.str()
		case "iteration":
			t.Iteration, err = s.int()
		case "group_id":
			t.GroupID, err = s.str()
		case "group_size":
			t.GroupSize, err = s.int()
		case "sample_index":
			t.SampleIndex, err = s.int()
		case "policy_version":
			t.PolicyVersion, err = s.int64()
		case "seed":
			t.Seed, err = s.uint64()
		case "temperature":
			t.Temperature, err = s.float64Ptr()
		case "model":
			err = s.model(&t.Model)
		case "input_ids", "tokens":
			sp.saw(key == "tokens", renamedTokens)
			t.Tokens, raw.Tokens, err = s.int32s()
		case "prompt_len":
			t.PromptLen, err = s.int()
		case "response_mask", "loss_mask":
			sp.saw(key == "loss_mask", renamedMask)
			var m []uint8
			m, raw.LossMask, err = s.uint8s()
			t.LossMask = m
		case "rollout_log_probs", "logprobs":
			sp.saw(key == "logprobs", renamedLogprobs)
			t.Logprobs, raw.Logprobs, err = s.float32s()
		case "ref_log_prob", "ref_logprobs":
			sp.saw(key == "ref_logprobs", renamedRef)
			t.RefLogprobs, raw.RefLogprobs, err = s.float32s()
		case "segments":
			t.Segments, err = s.segments()
		case "finish_reason":
			var r string
			r, err = s.str()
			t.FinishReason = traj.FinishReason(r)
		case "reward":
			err = s.reward(&t.Reward, &sp)
		case "reward_parts":
			sp.saw(false, renamedParts)
			err = s.rewardParts(&t.Reward)
		case "step_rewards":
			t.StepRewards, err = s.float64s()
		case "answer":
			t.Answer, err = s.str()
		case "meta":
			t.Meta, err = s.raw()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return sp.check(t.Schema, traj.TrajectorySchema, traj.TrajectoryNames(traj.TrajectorySchemaV2), traj.TrajectoryNames(traj.TrajectorySchema))
}

// saw notes a renamed field (bit), spelled the old way or the v3 way.
func (sp *spelling) saw(old bool, bit uint8) {
	if old {
		sp.old |= bit
	} else {
		sp.v3 |= bit
	}
}

func (s *scanner) model(m *traj.ModelRef) error {
	return s.nested(modelFields, func(key string) (err error) {
		switch key {
		case "name":
			m.Name, err = s.str()
		case "hash":
			m.Hash, err = s.str()
		case "quantization":
			m.Quantization, err = s.str()
		}
		return err
	})
}

// reward reads the "reward" field: a number (v3) or the v1/v2 object
// {"total": ..., "parts": {...}}, noting which in sp.
func (s *scanner) reward(r *traj.Reward, sp *spelling) error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		if s.i < len(s.b) && s.b[s.i] != 'n' { // null says neither
			sp.saw(false, renamedReward)
		}
		var err error
		r.Total, err = s.float64()
		return err
	}
	sp.saw(true, renamedReward)
	return s.nested(oldRewardFields, func(key string) (err error) {
		switch key {
		case "total":
			r.Total, err = s.float64()
		case "parts":
			sp.saw(true, renamedParts)
			return s.rewardParts(r)
		}
		return err
	})
}

// rewardParts reads the reward's parts: an object of numbers, or null.
func (s *scanner) rewardParts(r *traj.Reward) error {
	if s.null() {
		r.Parts = nil
		return nil
	}
	if r.Parts == nil {
		r.Parts = map[string]float64{}
	}
	return s.mapObject(func(name string) error {
		v, err := s.float64()
		r.Parts[name] = v
		return err
	})
}

func (s *scanner) segments() ([]traj.Segment, error) {
	if s.null() {
		return nil, nil
	}
	// A group's segments share one slab (one allocation, not one a
	// trajectory); each trajectory gets a full-capacity sub-slice.
	if cap(s.segSlab)-len(s.segSlab) < 8 {
		s.segSlab = make([]traj.Segment, 0, max(8, 8*s.groupHint))
	}
	start := len(s.segSlab)
	err := s.array(func(i int) error {
		s.segSlab = append(s.segSlab, traj.Segment{}) // may move the slab: the sub-slice is taken at the end
		seg := &s.segSlab[start+i]
		err := s.nested(segmentFields, func(key string) (err error) {
			switch key {
			case "kind":
				var k string
				k, err = s.str()
				seg.Kind = traj.SegmentKind(k)
			case "turn":
				seg.Turn, err = s.int()
			case "start":
				seg.Start, err = s.int()
			case "end":
				seg.End, err = s.int()
			case "text":
				seg.Text, err = s.str()
			case "call":
				if s.null() {
					seg.Call = nil
					return nil
				}
				if seg.Call == nil {
					seg.Call = &traj.ToolCall{}
				}
				err = s.call(seg.Call)
			case "result":
				if s.null() {
					seg.Result = nil
					return nil
				}
				if seg.Result == nil {
					seg.Result = s.newResult()
				}
				err = s.result(seg.Result)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("[%d].%w", i, err)
		}
		return nil
	})
	end := len(s.segSlab)
	return s.segSlab[start:end:end], err
}

func (s *scanner) call(c *traj.ToolCall) error {
	return s.nested(callFields, func(key string) (err error) {
		switch key {
		case "name":
			c.Name, err = s.str()
		case "arguments":
			c.Arguments, err = s.raw()
		case "raw":
			c.Raw, err = s.str()
		case "parse_error":
			c.ParseError, err = s.str()
		}
		return err
	})
}

// newResult returns a zero ToolResult from the scanner's current chunk of
// them (a new chunk when it is full: earlier pointers stay valid), one
// allocation for many tool segments.
func (s *scanner) newResult() *traj.ToolResult {
	if len(s.resSlab) == cap(s.resSlab) {
		s.resSlab = make([]traj.ToolResult, 0, max(8, 2*s.groupHint))
	}
	s.resSlab = s.resSlab[:len(s.resSlab)+1]
	return &s.resSlab[len(s.resSlab)-1]
}

func (s *scanner) result(r *traj.ToolResult) error {
	return s.nested(resultFields, func(key string) (err error) {
		switch key {
		case "ok":
			r.OK, err = s.bool(r.OK)
		case "error_class":
			r.ErrorClass, err = s.str()
		case "error":
			r.Error, err = s.str()
		case "content":
			r.Content, err = s.str()
		case "latency_ms":
			r.LatencyMS, err = s.float64()
		case "truncated":
			r.Truncated, err = s.bool(r.Truncated)
		case "fault":
			r.Fault, err = s.str()
		}
		return err
	})
}
