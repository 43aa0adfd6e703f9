package traj_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// sample returns a valid trajectory: prompt of 3 tokens, a model segment of 4
// tokens ending in a call, a tool segment of 2 injected tokens, and a final
// model segment of 3 tokens.
func sample() traj.Trajectory {
	return traj.Trajectory{
		Schema: traj.TrajectorySchema, ID: "job/p1/0", JobID: "job", PromptID: "p1", GroupID: "job/p1",
		GroupSize: 2, SampleIndex: 0, PolicyVersion: 3, Seed: 42, Temperature: ptr(0.7),
		Model:     traj.ModelRef{Name: "calc", Hash: "sha256:abc"},
		Tokens:    []int32{1, 2, 3, 10, 11, 12, 13, 20, 21, 30, 31, 2},
		PromptLen: 3,
		LossMask:  traj.Mask{1, 1, 1, 1, 0, 0, 1, 1, 1},
		Logprobs:  []float32{-0.1, -0.25, -1e-7, -3.5, 0, 0, -0.5, -0.125, -2},
		Segments: []traj.Segment{
			{Kind: traj.SegmentModel, Turn: 0, Start: 0, End: 4, Text: "[CALC: 1+1]",
				Call: &traj.ToolCall{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`), Raw: "[CALC: 1+1]"}},
			{Kind: traj.SegmentTool, Turn: 0, Start: 4, End: 6, Text: " = 2",
				Result: &traj.ToolResult{OK: true, Content: "2", LatencyMS: 0.5}},
			{Kind: traj.SegmentModel, Turn: 1, Start: 6, End: 9, Text: " The answer is 2."},
		},
		FinishReason: traj.FinishStop,
		Reward:       traj.Reward{Total: 1.1, Parts: map[string]float64{"outcome": 1, "tool_success": 0.2, "call_cost": -0.1}},
		StepRewards:  []float64{0.1, 1.0},
		Answer:       "2",
	}
}

func ptr(v float64) *float64 { return &v }

func TestValidTrajectoryRoundTrips(t *testing.T) {
	in := sample()
	if err := in.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	data, err := wire.EncodeTrajectory(&in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"response_mask":[1,1,1,1,0,0,1,1,1]`) {
		t.Errorf("response_mask is not a JSON number array: %s", data)
	}
	out, err := wire.DecodeTrajectory(data)
	if err != nil {
		t.Fatalf("wire.DecodeTrajectory: %v", err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip differs:\n in: %+v\nout: %+v", in, out)
	}
	again, _ := wire.EncodeTrajectory(&out)
	if string(again) != string(data) {
		t.Errorf("second encoding differs:\n%s\n%s", data, again)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(*traj.Trajectory)
		field  string
	}{
		{"schema", func(t *traj.Trajectory) { t.Schema = "toolrl.trajectory/v0" }, "schema"},
		{"advantage schema", func(t *traj.Trajectory) { t.Schema = traj.AdvantageSchema }, "schema"},
		{"temperature in v1", func(t *traj.Trajectory) { t.Schema = traj.TrajectorySchemaV1 }, "temperature"},
		{"negative temperature", func(t *traj.Trajectory) { t.Temperature = ptr(-0.5) }, "temperature"},
		{"NaN temperature", func(t *traj.Trajectory) { t.Temperature = ptr(math.NaN()) }, "temperature"},
		{"infinite temperature", func(t *traj.Trajectory) { t.Temperature = ptr(math.Inf(1)) }, "temperature"},
		{"empty id", func(t *traj.Trajectory) { t.ID = "" }, "id"},
		{"empty group", func(t *traj.Trajectory) { t.GroupID = "" }, "group_id"},
		{"sample index out of group", func(t *traj.Trajectory) { t.SampleIndex = 2 }, "sample_index"},
		{"prompt_len past tokens", func(t *traj.Trajectory) { t.PromptLen = 13 }, "prompt_len"},
		{"mask short", func(t *traj.Trajectory) { t.LossMask = t.LossMask[:8] }, "response_mask"},
		{"mask value", func(t *traj.Trajectory) { t.LossMask[0] = 2 }, "response_mask[0]"},
		{"logprobs short", func(t *traj.Trajectory) { t.Logprobs = t.Logprobs[1:] }, "rollout_log_probs"},
		{"positive logprob", func(t *traj.Trajectory) { t.Logprobs[1] = 0.5 }, "rollout_log_probs[1]"},
		{"NaN logprob", func(t *traj.Trajectory) { t.Logprobs[2] = float32(math.NaN()) }, "rollout_log_probs[2]"},
		{"logprob on injected", func(t *traj.Trajectory) { t.Logprobs[4] = -1 }, "rollout_log_probs[4]"},
		{"ref short", func(t *traj.Trajectory) { t.RefLogprobs = []float32{-1} }, "ref_log_prob"},
		{"segment gap", func(t *traj.Trajectory) { t.Segments[1].Start = 5 }, "segments[1].start"},
		{"segment past end", func(t *traj.Trajectory) { t.Segments[2].End = 10 }, "segments[2].end"},
		{"segments short", func(t *traj.Trajectory) { t.Segments = t.Segments[:2] }, "segments"},
		{"mask disagrees with kind", func(t *traj.Trajectory) { t.LossMask[4] = 1 }, "response_mask[4]"},
		{"tool without result", func(t *traj.Trajectory) { t.Segments[1].Result = nil }, "segments[1].result"},
		{"finish reason", func(t *traj.Trajectory) { t.FinishReason = "done" }, "finish_reason"},
		{"reward NaN", func(t *traj.Trajectory) { t.Reward.Total = math.Inf(1) }, "reward"},
		{"step rewards count", func(t *traj.Trajectory) { t.StepRewards = []float64{1} }, "step_rewards"},
		{"negative token", func(t *traj.Trajectory) { t.Tokens[5] = -1 }, "input_ids[5]"},
		{"negative iteration", func(t *traj.Trajectory) { t.Iteration = -1 }, "iteration"},
		{"iteration in v1", func(t *traj.Trajectory) { t.Schema, t.Temperature, t.Iteration = traj.TrajectorySchemaV1, nil, 2 }, "iteration"},
		// A v2 trajectory's errors use v2's names.
		{"v2 mask value", func(t *traj.Trajectory) { t.Schema, t.LossMask[0] = traj.TrajectorySchemaV2, 2 }, "loss_mask[0]"},
		{"v2 logprob", func(t *traj.Trajectory) { t.Schema, t.Logprobs[1] = traj.TrajectorySchemaV2, 0.5 }, "logprobs[1]"},
		{"v2 token", func(t *traj.Trajectory) { t.Schema, t.Tokens[5] = traj.TrajectorySchemaV2, -1 }, "tokens[5]"},
		{"v2 reward", func(t *traj.Trajectory) { t.Schema, t.Reward.Total = traj.TrajectorySchemaV2, math.NaN() }, "reward.total"},
		{"v1 ref", func(t *traj.Trajectory) {
			t.Schema, t.Temperature, t.RefLogprobs = traj.TrajectorySchemaV1, nil, []float32{-1}
		}, "ref_logprobs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := sample()
			c.break_(&tr)
			err := tr.Validate()
			var fe *traj.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *traj.FieldError", err)
			}
			if fe.Field != c.field {
				t.Errorf("field = %q, want %q (error: %v)", fe.Field, c.field, err)
			}
			if fe.Record != tr.ID {
				t.Errorf("record = %q, want %q (error: %v)", fe.Record, tr.ID, err)
			}
		})
	}
}

func TestUnmarshalRejectsUnknownFieldsAndNaN(t *testing.T) {
	tr := sample()
	data, _ := wire.EncodeTrajectory(&tr)
	bad := strings.Replace(string(data), `"schema"`, `"surprise":1,"schema"`, 1)
	if _, err := wire.DecodeTrajectory([]byte(bad)); err == nil || !strings.Contains(err.Error(), "surprise") {
		t.Errorf("unknown field accepted: %v", err)
	}
	tr.Logprobs[0] = float32(math.NaN())
	if _, err := wire.EncodeTrajectory(&tr); err == nil {
		t.Error("NaN logprob encoded without error")
	}
}

func TestGroupValidate(t *testing.T) {
	a, b := sample(), sample()
	b.ID, b.SampleIndex = "job/p1/1", 1
	g := traj.NewGroup([]traj.Trajectory{a, b})
	if err := g.Validate(); err != nil {
		t.Fatalf("valid group: %v", err)
	}
	data, _ := wire.EncodeGroup(&g)
	back, err := wire.DecodeGroup(data)
	if err != nil || !reflect.DeepEqual(back, g) {
		t.Fatalf("group round trip: %v", err)
	}
	b.SampleIndex = 0
	g = traj.NewGroup([]traj.Trajectory{a, b})
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "sample_index") {
		t.Errorf("duplicate sample index accepted: %v", err)
	}
	c := sample()
	c.ID, c.SampleIndex, c.GroupID = "job/p2/1", 1, "job/p2"
	g = traj.NewGroup([]traj.Trajectory{a, c})
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "group_id") {
		t.Errorf("foreign member accepted: %v", err)
	}
}

func TestAdvantageRecord(t *testing.T) {
	tr := sample()
	r := traj.AdvantageRecord{
		Schema: traj.AdvantageSchema, TrajectoryID: tr.ID, GroupID: tr.GroupID, InputIDs: tr.Tokens, PromptLen: tr.PromptLen,
		LossMask: tr.LossMask, OldLogprobs: tr.Logprobs,
		Advantages: []float32{0.5, 0.5, 0.5, 0.5, 0, 0, 0.5, 0.5, 0.5},
		Reward:     tr.Reward, Mode: "outcome", Estimator: "grpo",
	}
	data, err := wire.EncodeRecord(&r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := wire.DecodeRecord(data)
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip: %v", err)
	}
	r.Advantages[4] = 0.1
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "advantages[4]") {
		t.Errorf("advantage on injected token accepted: %v", err)
	}
}

// FuzzDecodeValidate: arbitrary bytes never panic the decoder, and whatever
// decodes and validates re-encodes to something that decodes to the same value.
func FuzzDecodeValidate(f *testing.F) {
	tr := sample()
	seed, _ := wire.EncodeTrajectory(&tr)
	f.Add(seed)
	f.Add([]byte(`{"schema":"toolrl.trajectory/v1"}`))
	f.Add([]byte(v1Line))
	f.Add([]byte(`{"loss_mask":[1,2,300]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := wire.DecodeTrajectory(data)
		if err != nil {
			return
		}
		again, err := wire.EncodeTrajectory(&got)
		if err != nil {
			t.Fatalf("valid trajectory does not re-encode: %v", err)
		}
		back, err := wire.DecodeTrajectory(again)
		if err != nil {
			t.Fatalf("re-encoded trajectory does not decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(back), normalize(got)) {
			t.Fatalf("round trip differs")
		}
	})
}

// normalize maps empty JSON raw messages to nil so DeepEqual compares values.
func normalize(t traj.Trajectory) traj.Trajectory {
	if len(t.Meta) == 0 {
		t.Meta = nil
	}
	return t
}

// v1Line is a trajectory as toolrl wrote it before schema v2: no temperature.
const v1Line = `{"schema":"toolrl.trajectory/v1","id":"old/p/0","job_id":"old","prompt_id":"p","group_id":"old/p","group_size":1,"sample_index":0,"policy_version":0,"seed":7,"model":{"name":"calc"},"tokens":[5,6,7,10,11],"prompt_len":3,"loss_mask":[1,1],"logprobs":[-0.5,-0.25],"segments":[{"kind":"model","turn":0,"start":0,"end":2,"text":" 4"}],"finish_reason":"stop","reward":{"total":1}}`

func TestTemperatureSchemaV2(t *testing.T) {
	// Greedy is an explicit 0 on the wire; unknown is absent.
	tr := sample()
	tr.Temperature = ptr(0)
	data, err := wire.EncodeTrajectory(&tr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"schema":"toolrl.trajectory/v3"`) || !strings.Contains(string(data), `"temperature":0,`) {
		t.Errorf("greedy trajectory: want schema v3 and temperature 0 on the wire: %s", data)
	}
	back, err := wire.DecodeTrajectory(data)
	if err != nil || back.Temperature == nil || *back.Temperature != 0 {
		t.Fatalf("greedy trajectory decodes to temperature %v, %v; want 0", back.Temperature, err)
	}
	tr.Temperature = nil
	data, _ = wire.EncodeTrajectory(&tr)
	if strings.Contains(string(data), "temperature") {
		t.Errorf("unknown temperature written: %s", data)
	}
	if back, err := wire.DecodeTrajectory(data); err != nil || back.Temperature != nil {
		t.Errorf("v3 without temperature: %v, %v", back.Temperature, err)
	}
}

func TestV1TrajectoryStillReads(t *testing.T) {
	old, err := wire.DecodeTrajectory([]byte(v1Line))
	if err != nil {
		t.Fatalf("v1 line: %v", err)
	}
	if old.Schema != traj.TrajectorySchemaV1 || old.Temperature != nil {
		t.Errorf("v1 line decoded as schema %q temperature %v", old.Schema, old.Temperature)
	}
	// A v1 record with a temperature is not one a v1 writer produced.
	bad := strings.Replace(v1Line, `"seed":7,`, `"seed":7,"temperature":1,`, 1)
	_, err = wire.DecodeTrajectory([]byte(bad))
	var fe *traj.FieldError
	if !errors.As(err, &fe) || fe.Field != "temperature" || fe.Record != "old/p/0" {
		t.Errorf("v1 line with temperature: %v, want a temperature field error", err)
	}

	// Groups follow the same rule: a v1 group of v1 trajectories reads, a
	// v3 group may hold v1 trajectories, a v1 group may not hold newer ones.
	g := traj.Group{Schema: traj.TrajectorySchemaV1, GroupID: old.GroupID, JobID: old.JobID, PromptID: old.PromptID, Trajectories: []traj.Trajectory{old}}
	data, _ := wire.EncodeGroup(&g)
	if _, err := wire.DecodeGroup(data); err != nil {
		t.Errorf("v1 group: %v", err)
	}
	if g2 := traj.NewGroup([]traj.Trajectory{old}); g2.Schema != traj.TrajectorySchema || g2.Validate() != nil {
		t.Errorf("v3 group of a v1 trajectory: schema %q, %v", g2.Schema, g2.Validate())
	}
	newer := old
	newer.Schema, newer.Temperature = traj.TrajectorySchema, ptr(1)
	g.Trajectories = []traj.Trajectory{newer}
	if err := g.Validate(); !errors.As(err, &fe) || fe.Field != "trajectories[0].schema" {
		t.Errorf("v1 group holding a v3 trajectory: %v", err)
	}
	g.Schema = "toolrl.trajectory/v4"
	if err := g.Validate(); !errors.As(err, &fe) || fe.Field != "schema" {
		t.Errorf("unknown group schema: %v", err)
	}
}

func TestAdvantageRecordTemperature(t *testing.T) {
	tr := sample()
	r := traj.AdvantageRecord{
		Schema: traj.AdvantageSchema, TrajectoryID: tr.ID, GroupID: tr.GroupID, Temperature: ptr(0),
		InputIDs: tr.Tokens, PromptLen: tr.PromptLen, LossMask: tr.LossMask, OldLogprobs: tr.Logprobs,
		Advantages: make([]float32, len(tr.LossMask)), Reward: tr.Reward, Mode: "outcome", Estimator: "grpo",
	}
	data, err := wire.EncodeRecord(&r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"schema":"toolrl.advantage/v3"`) || !strings.Contains(string(data), `"policy_version":0,"temperature":0,`) {
		t.Errorf("want schema v3 and temperature 0 after policy_version: %s", data)
	}
	if back, err := wire.DecodeRecord(data); err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip: %v", err)
	}

	// A v1 record (no temperature) still reads; one with a temperature does not.
	v1 := strings.Replace(string(data), `"toolrl.advantage/v3"`, `"toolrl.advantage/v1"`, 1)
	var fe *traj.FieldError
	if _, err := wire.DecodeRecord([]byte(v1)); !errors.As(err, &fe) || fe.Field != "temperature" || fe.Record != tr.ID {
		t.Errorf("v1 record with temperature: %v, want a temperature field error", err)
	}
	v1 = strings.Replace(v1, `"temperature":0,`, "", 1)
	if back, err := wire.DecodeRecord([]byte(v1)); err != nil || back.Schema != traj.AdvantageSchemaV1 || back.Temperature != nil {
		t.Errorf("v1 record: %+v, %v", back, err)
	}

	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		r.Temperature = ptr(bad)
		if err := r.Validate(); !errors.As(err, &fe) || fe.Field != "temperature" || fe.Record != tr.ID {
			t.Errorf("temperature %g: %v, want a temperature field error", bad, err)
		}
	}
	r.Temperature, r.Schema = nil, "toolrl.trajectory/v2"
	if err := r.Validate(); !errors.As(err, &fe) || fe.Field != "schema" {
		t.Errorf("trajectory schema on a record: %v", err)
	}
}

func TestGroupIDAndTrajectoryIDCarryTheIteration(t *testing.T) {
	for _, c := range []struct {
		iteration, sample int
		group, id         string
	}{
		// Iteration 0 keeps the ids written before iterations existed.
		{0, 3, "job/p7", "job/p7/3"},
		{1, 0, "job/p7@1", "job/p7@1/0"},
		{12, 7, "job/p7@12", "job/p7@12/7"},
	} {
		if got := traj.GroupID("job", "p7", c.iteration); got != c.group {
			t.Errorf("GroupID(job, p7, %d) = %q, want %q", c.iteration, got, c.group)
		}
		if got := traj.TrajectoryID("job", "p7", c.iteration, c.sample); got != c.id {
			t.Errorf("TrajectoryID(job, p7, %d, %d) = %q, want %q", c.iteration, c.sample, got, c.id)
		}
	}
}

// TestIterationV1 (the v2 side is in iteration_test.go): v1 data has no
// iteration, so a v1 line or group carrying one is not v1 data.
func TestIterationV1(t *testing.T) {
	var fe *traj.FieldError
	v1 := strings.Replace(v1Line, `"prompt_id":"p",`, `"prompt_id":"p","iteration":1,`, 1)
	if _, err := wire.DecodeTrajectory([]byte(v1)); !errors.As(err, &fe) || fe.Field != "iteration" || fe.Record != "old/p/0" {
		t.Errorf("v1 line with iteration: %v, want an iteration field error", err)
	}
	old, _ := wire.DecodeTrajectory([]byte(v1Line))
	gv1 := traj.Group{Schema: traj.TrajectorySchemaV1, GroupID: old.GroupID, JobID: old.JobID, PromptID: old.PromptID, Iteration: 1, Trajectories: []traj.Trajectory{old}}
	if err := gv1.Validate(); !errors.As(err, &fe) || fe.Field != "iteration" {
		t.Errorf("v1 group with iteration: %v, want an iteration field error", err)
	}
}
