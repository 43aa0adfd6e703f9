package advantage

import (
	encjson "encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// The service's path (wire.DecodeGroupArrays, Compute, wire.AppendRecord
// with the raw arrays spliced in) writes every mode's records byte for byte
// as encoding/json does.
func TestServiceRecordsMatchEncodingJSON(t *testing.T) {
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
		data, err := wire.EncodeGroup(&g)
		if err != nil {
			t.Fatal(err)
		}
		back, raws, err := wire.DecodeGroupArrays(data)
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
			want, err := encjson.Marshal(&recs[i])
			if err != nil {
				t.Fatal(err)
			}
			got, err := wire.AppendRecord(nil, &recs[i], &raws[i])
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("iter %d record %d:\n got %s\nwant %s", iter, i, got, want)
			}
		}
	}
}
