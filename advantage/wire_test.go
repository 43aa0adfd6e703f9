package advantage

import (
	"math/rand/v2"
	"reflect"
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
	if a, b := jsonNames(wireTrajectory{}), jsonNames(traj.Trajectory{}); !reflect.DeepEqual(a, b) {
		t.Errorf("wireTrajectory fields %v\n  traj.Trajectory fields %v", a, b)
	}
	if a, b := jsonNames(wireGroup{}), jsonNames(traj.Group{}); !reflect.DeepEqual(a, b) {
		t.Errorf("wireGroup fields %v\n  traj.Group fields %v", a, b)
	}
	if a := jsonNames(traj.AdvantageRecord{}); strings.Join(a, " ") != "schema trajectory_id group_id sample_index policy_version input_ids prompt_len "+
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
		for i := range g.Trajectories {
			tr := &g.Trajectories[i]
			tr.Reward.Parts = map[string]float64{"outcome": rng.Float64(), "call_cost": -1e-7}
			tr.Segments[0].Text = "<tool> & \"x\""
			if iter%3 == 0 {
				tr.RefLogprobs = nil
			}
			if iter%5 == 0 {
				tr.Logprobs[0] = -1e-30
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
	// Whitespace inside arrays is valid JSON and decodes.
	spaced := strings.Replace(s, `"tokens":[1,2`, `"tokens":[ 1 , 2`, 1)
	if _, _, err := decodeWireGroup([]byte(spaced)); err != nil {
		t.Errorf("spaced array: %v", err)
	}
}
