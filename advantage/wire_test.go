package advantage

import (
	"bytes"
	encjson "encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/traj"
)

// jsonNames lists a struct type's JSON field names in order.
func jsonNames(v any) []string {
	t := reflect.TypeOf(v)
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if tag := t.Field(i).Tag.Get("json"); tag != "" {
			names = append(names, tag)
		}
	}
	return names
}

// The wire structs must follow traj's: a field added there must be added
// here, or the service would reject (strict decode) every group carrying it.
func TestWireStructsMirrorTraj(t *testing.T) {
	bare := func(names []string) []string {
		for i, n := range names {
			names[i], _, _ = strings.Cut(n, ",")
		}
		return names
	}
	if a, b := trajectoryFields, bare(jsonNames(traj.Trajectory{})); !reflect.DeepEqual(a, b) {
		t.Errorf("decoder's trajectory fields %v\n  traj.Trajectory fields %v", a, b)
	}
	if a, b := groupFields, bare(jsonNames(traj.Group{})); !reflect.DeepEqual(a, b) {
		t.Errorf("decoder's group fields %v\n  traj.Group fields %v", a, b)
	}
	for _, c := range []struct {
		known []string
		typ   any
	}{
		{modelFields, traj.ModelRef{}}, {segmentFields, traj.Segment{}}, {callFields, traj.ToolCall{}},
		{resultFields, traj.ToolResult{}}, {rewardFields, traj.Reward{}},
	} {
		if b := bare(jsonNames(c.typ)); !reflect.DeepEqual(c.known, b) {
			t.Errorf("decoder's %T fields %v\n  traj's %v", c.typ, c.known, b)
		}
	}
	if a := jsonNames(traj.AdvantageRecord{}); strings.Join(a, " ") != "schema trajectory_id group_id iteration,omitempty sample_index policy_version temperature,omitempty input_ids prompt_len "+
		"loss_mask old_logprobs ref_logprobs,omitempty advantages kl,omitempty kl_estimator,omitempty reward step_rewards,omitempty "+
		"segments,omitempty mode estimator zero_variance,omitempty stale,omitempty" {
		t.Errorf("traj.AdvantageRecord changed; update appendRecord: %v", a)
	}
}

// The lean codec decodes what traj encodes into the same group, and writes
// records byte for byte as traj.MarshalAdvantage does.
func TestWireCodecMatchesTraj(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for iter := 0; iter < 200; iter++ {
		g := randomGroup(rng, 1+rng.IntN(6))
		if iter%6 == 3 {
			asV1(&g) // old data: v2 records without temperature
		} else if iter%4 == 3 {
			// A later iteration of the closed loop (iteration 0 is omitted).
			g.Iteration = 1 + iter%11
			g.GroupID += "@" + strconv.Itoa(g.Iteration)
			for i := range g.Trajectories {
				g.Trajectories[i].Iteration, g.Trajectories[i].GroupID = g.Iteration, g.GroupID
			}
		}
		for i := range g.Trajectories {
			tr := &g.Trajectories[i]
			switch iter % 6 {
			case 0:
				tr.Temperature = nil // v2 may leave it unknown
			case 1:
				tr.Temperature = new(float64) // greedy: an explicit 0
			case 2:
				v := 1e-7 // encoding/json's exponent form
				tr.Temperature = &v
			}
			tr.Reward.Parts = map[string]float64{"outcome": rng.Float64(), "call_cost": -1e-7}
			tr.Segments[0].Text = "<tool> & \"x\""
			if iter%3 == 0 {
				tr.RefLogprobs = nil
			}
			if iter%5 == 0 {
				tr.Logprobs[0] = -1e-30
			}
			if iter%4 == 1 {
				tr.Seed, tr.Answer, tr.Meta = rng.Uint64(), "42 é\n", []byte(`{"k":[1,"]"]}`)
				tr.Model.Hash = "sha256:x"
				call := &traj.ToolCall{Name: "calc", Arguments: []byte(`{"expression":"1 + 2"}`), Raw: "<call>1+2</call>"}
				tr.Segments[0].Call = call
				if len(tr.Segments) > 1 {
					tr.Segments[1].Call = call
					tr.Segments[1].Result = &traj.ToolResult{ErrorClass: "timeout", Error: "took \"long\"", Content: "",
						LatencyMS: 12.5, Truncated: true}
				}
			}
			if iter%4 == 2 {
				tr.Reward.Parts = nil
				tr.Segments[0].Call = &traj.ToolCall{Name: "x", Raw: "?", ParseError: "bad_json: eof"}
			}
		}
		data, err := traj.MarshalGroup(&g)
		if err != nil {
			t.Fatal(err)
		}
		back, raws, err := decodeWireGroup(data)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		if !reflect.DeepEqual(*back, g) {
			t.Fatalf("iter %d: decoded group differs", iter)
		}
		cfg := allConfigs()[iter%len(allConfigs())]
		if iter%2 == 0 {
			cfg.MaxStaleness, cfg.FlagStale, cfg.CurrentPolicyVersion = 0, true, 9
		}
		recs, _, err := Compute(back, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			if recs[i].Schema != traj.AdvantageSchema || !reflect.DeepEqual(recs[i].Temperature, g.Trajectories[i].Temperature) {
				t.Fatalf("iter %d record %d: schema %s temperature %v, want %s and the trajectory's %v", iter, i,
					recs[i].Schema, recs[i].Temperature, traj.AdvantageSchema, g.Trajectories[i].Temperature)
			}
			if recs[i].Iteration != g.Iteration || recs[i].GroupID != g.GroupID {
				t.Fatalf("iter %d record %d: iteration %d of group %s, want the group's %d of %s", iter, i,
					recs[i].Iteration, recs[i].GroupID, g.Iteration, g.GroupID)
			}
			want, err := traj.MarshalAdvantage(&recs[i])
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendRecord(nil, &recs[i], &raws[i])
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("iter %d record %d:\n got %s\nwant %s", iter, i, got, want)
			}
		}
	}
}

func TestWireDecodeRejects(t *testing.T) {
	g := randomGroup(rand.New(rand.NewPCG(1, 1)), 2)
	data, _ := traj.MarshalGroup(&g)
	s := string(data)
	for name, bad := range map[string]string{
		"unknown field":  strings.Replace(s, `"prompt_len"`, `"surprise":1,"prompt_len"`, 1),
		"unknown nested": strings.Replace(s, `"kind":"model"`, `"kind":"model","surprise":1`, 1),
		"unknown top":    strings.Replace(s, `"group_id"`, `"surprise":1,"group_id"`, 1),
		"float token":    strings.Replace(s, `"tokens":[1,`, `"tokens":[1.5,`, 1),
		"string logprob": strings.Replace(s, `"logprobs":[`, `"logprobs":["x",`, 1),
		"mask 300":       strings.Replace(s, `"loss_mask":[1`, `"loss_mask":[300`, 1),
		"mask 2":         strings.Replace(s, `"loss_mask":[1`, `"loss_mask":[2`, 1),
		"truncated":      s[:len(s)/2],
		"trailing":       s + "{}",
	} {
		if bad == s {
			t.Fatalf("%s: replacement did not apply", name)
		}
		if _, _, err := decodeWireGroup([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, bad := range map[string]string{
		"leading zero":   strings.Replace(s, `"tokens":[1,`, `"tokens":[01,`, 1),
		"bare fraction":  strings.Replace(s, `"logprobs":[`, `"logprobs":[-.5,`, 1),
		"open fraction":  strings.Replace(s, `"logprobs":[`, `"logprobs":[-1.,`, 1),
		"float size":     strings.Replace(s, `"group_size":2`, `"group_size":2.0`, 1),
		"missing comma":  strings.Replace(s, `"tokens":[1,`, `"tokens":[1 `, 1),
		"bad key":        strings.Replace(s, `"prompt_len"`, `prompt_len`, 1),
		"overflow":       strings.Replace(s, `"logprobs":[`, `"logprobs":[-1e39,`, 1),
		"unknown model":  strings.Replace(s, `"model":{`, `"model":{"surprise":1,`, 1),
		"unknown result": strings.Replace(s, `"result":{`, `"result":{"surprise":1,`, 1),
		"bad meta":       strings.Replace(s, `"finish_reason"`, `"meta":{"a":},"finish_reason"`, 1),
		"string reward":  strings.Replace(s, `"total":`, `"total":"1",`, 1),
		"bool ok":        strings.Replace(s, `"ok":true`, `"ok":1`, 1),
		"string temp":    strings.Replace(s, `"temperature":0.7`, `"temperature":"0.7"`, 1),
		"negative temp":  strings.Replace(s, `"temperature":0.7`, `"temperature":-0.7`, 1),
		"temp in v1":     strings.Replace(s, `"schema":"toolrl.trajectory/v2","id"`, `"schema":"toolrl.trajectory/v1","id"`, 1),
		"v1 group of v2": strings.Replace(s, `{"schema":"toolrl.trajectory/v2"`, `{"schema":"toolrl.trajectory/v1"`, 1),
		"string iter":    strings.Replace(s, `"policy_version"`, `"iteration":"1","policy_version"`, 1),
		"float iter":     strings.Replace(s, `"policy_version"`, `"iteration":1.5,"policy_version"`, 1),
		"negative iter":  strings.ReplaceAll(s, `"group_size"`, `"iteration":-1,"group_size"`),
		"mixed iters":    strings.Replace(s, `"group_size"`, `"iteration":1,"group_size"`, 1),
		"iter not group": strings.ReplaceAll(s, `"group_size"`, `"iteration":1,"group_size"`),
	} {
		if bad == s {
			t.Fatalf("%s: replacement did not apply", name)
		}
		if _, _, err := decodeWireGroup([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Whitespace anywhere, keys in other case and escaped keys are valid JSON
	// and decode as traj's decoder decodes them.
	var indented bytes.Buffer
	if err := encjson.Indent(&indented, data, " ", "\t"); err != nil {
		t.Fatal(err)
	}
	for name, good := range map[string]string{
		"spaced array": strings.Replace(s, `"tokens":[1,2`, `"tokens":[ 1 , 2`, 1),
		"indented":     indented.String(),
		"key case":     strings.Replace(s, `"prompt_len"`, `"Prompt_Len"`, 1),
		"escaped key":  strings.Replace(s, `"prompt_len"`, `"prompt\u005flen"`, 1),
		"nulls": strings.Replace(strings.Replace(s, `"finish_reason"`, `"meta":null,"answer":null,"finish_reason"`, 1),
			`"model":{`, `"model":{"hash":null,`, 1),
		"meta":       strings.Replace(s, `"finish_reason"`, `"meta":{"a": [1, {"b":"}"}]},"finish_reason"`, 1),
		"parts case": strings.Replace(s, `"total":`, `"Parts":{"Odd \"key\"":-0.25,"b":1e-7},"TOTAL":`, 1),
		"null temp":  strings.Replace(s, `"temperature":0.7`, `"temperature":null`, 1),
		"temp case":  strings.Replace(s, `"temperature":0.7`, `"Temperature":1e0`, 1),
		"v1": strings.ReplaceAll(strings.ReplaceAll(s, `"temperature":0.7,`, ""),
			`"schema":"toolrl.trajectory/v2"`, `"schema":"toolrl.trajectory/v1"`),
		"iteration": strings.Replace(strings.ReplaceAll(s, `"group_size"`, `"iteration":2,"group_size"`),
			`"policy_version"`, `"Iteration":2,"policy_version"`, 1),
		"null iteration": strings.Replace(s, `"policy_version"`, `"iteration":null,"policy_version"`, 1),
	} {
		if good == s {
			t.Fatalf("%s: replacement did not apply", name)
		}
		want, err := traj.UnmarshalGroup([]byte(good))
		if err != nil {
			t.Fatalf("%s: traj rejects it: %v", name, err)
		}
		got, _, err := decodeWireGroup([]byte(good))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !reflect.DeepEqual(*got, want) {
			t.Errorf("%s: decoded group differs from traj's", name)
		}
	}
}

// fastFloat32 agrees with strconv.ParseFloat(s, 32) on every float32 it
// accepts: the shortest forms encoding/json writes, random decimals, and
// values near float32 halfway points.
func TestFastFloat32MatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	check := func(s string) {
		got, ok := fastFloat32([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 32)
		if err != nil {
			t.Fatalf("%q: fast path accepted what strconv rejects: %v", s, err)
		}
		if math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Fatalf("%q: fast %v (%#x), strconv %v (%#x)", s, got, math.Float32bits(got), float32(want), math.Float32bits(float32(want)))
		}
	}
	accepted := 0
	for i := 0; i < 300000; i++ {
		f := math.Float32frombits(rng.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		b, _ := appendFloat(nil, float64(f), 32)
		check(string(b))
		if _, ok := fastFloat32(b); ok {
			accepted++
		}
		check(strconv.FormatFloat(float64(-rng.ExpFloat64()), 'f', rng.IntN(12), 64))
		check(strconv.FormatFloat(rng.NormFloat64()*1e5, 'e', rng.IntN(17), 64))
		// A float32 halfway point written out in full, and its neighbours.
		mid := (float64(f) + float64(math.Nextafter32(f, float32(math.Inf(1))))) / 2
		check(strconv.FormatFloat(mid, 'e', -1, 64))
		check(strconv.FormatFloat(math.Nextafter(mid, 0), 'e', -1, 64))
		check(strconv.FormatFloat(math.Nextafter(mid, math.Inf(1)), 'e', -1, 64))
	}
	if accepted < 100000 {
		t.Errorf("fast path took only %d of the shortest forms", accepted)
	}
	for _, s := range []string{"0", "-0", "0.0", "-1", "-0.5", "-1.25e-7", "1E3", "-2.5e+2", "3.4028235e38", "1e-45"} {
		check(s)
	}
}
