package wire

import (
	"bytes"
	"encoding/binary"
	encjson "encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// decodeStd is the reference the decoder must agree with: encoding/json
// with unknown fields refused, then traj's validation.
func decodeStd[T any, P interface {
	*T
	Validate() error
}](data []byte) (T, error) {
	var v T
	dec := encjson.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, err
	}
	if dec.More() {
		return v, errors.New("trailing data")
	}
	return v, P(&v).Validate()
}

// jsonNames lists a struct type's JSON field names (without options) in
// order, an embedded struct's in its place (as encoding/json writes them).
func jsonNames(v any) []string {
	return jsonNamesOf(reflect.TypeOf(v))
}

func jsonNamesOf(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if tag := f.Tag.Get("json"); tag != "" {
			name, _, _ := strings.Cut(tag, ",")
			names = append(names, name)
		} else if f.Anonymous {
			names = append(names, jsonNamesOf(f.Type)...)
		}
	}
	return names
}

// The decoder's field lists must follow traj's types: a field added there
// must be decoded here, or every group carrying it would be refused. The
// record encoder writes traj.AdvantageRecord's fields by hand, in order.
func TestFieldsMirrorTraj(t *testing.T) {
	for _, c := range []struct {
		known []string
		typ   any
	}{
		{groupFields, traj.Group{}}, {trajectoryFields, traj.Trajectory{}}, {recordFields, traj.AdvantageRecord{}},
		{modelFields, traj.ModelRef{}}, {segmentFields, traj.Segment{}}, {callFields, traj.ToolCall{}},
		{resultFields, traj.ToolResult{}}, {rewardFields, traj.Reward{}},
	} {
		if b := jsonNames(c.typ); !reflect.DeepEqual(c.known, b) {
			t.Errorf("decoder's %T fields %v\n  traj's %v", c.typ, c.known, b)
		}
	}
	var tags []string
	var walk func(rt reflect.Type)
	walk = func(rt reflect.Type) {
		for i := 0; i < rt.NumField(); i++ {
			if f := rt.Field(i); f.Anonymous && f.Tag.Get("json") == "" {
				walk(f.Type)
			} else {
				tags = append(tags, f.Tag.Get("json"))
			}
		}
	}
	walk(reflect.TypeOf(traj.AdvantageRecord{}))
	if strings.Join(tags, " ") != "schema trajectory_id group_id iteration,omitempty sample_index policy_version temperature,omitempty input_ids prompt_len "+
		"response_mask rollout_log_probs ref_log_prob,omitempty advantages kl,omitempty kl_estimator,omitempty reward reward_parts,omitempty step_rewards,omitempty "+
		"segments,omitempty mode estimator zero_variance,omitempty stale,omitempty" {
		t.Errorf("traj.AdvantageRecord changed; update AppendRecord: %v", tags)
	}
}

func TestDecodeGroupRejects(t *testing.T) {
	g := trajtest.Group(trajtest.Options{Size: 2, Temperature: trajtest.Temperature(0.7), Rewards: []float64{1, 0}})
	data, _ := EncodeGroup(g)
	s := string(data)
	for name, bad := range map[string]string{
		"unknown field":  strings.Replace(s, `"prompt_len"`, `"surprise":1,"prompt_len"`, 1),
		"unknown nested": strings.Replace(s, `"kind":"model"`, `"kind":"model","surprise":1`, 1),
		"unknown top":    strings.Replace(s, `"group_id"`, `"surprise":1,"group_id"`, 1),
		"float token":    strings.Replace(s, `"input_ids":[1,`, `"input_ids":[1.5,`, 1),
		"string logprob": strings.Replace(s, `"rollout_log_probs":[`, `"rollout_log_probs":["x",`, 1),
		"mask 300":       strings.Replace(s, `"response_mask":[1`, `"response_mask":[300`, 1),
		"mask 2":         strings.Replace(s, `"response_mask":[1`, `"response_mask":[2`, 1),
		"truncated":      s[:len(s)/2],
		"trailing":       s + "{}",
	} {
		if bad == s {
			t.Fatalf("%s: replacement did not apply", name)
		}
		if _, err := DecodeGroup([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, bad := range map[string]string{
		"leading zero":   strings.Replace(s, `"input_ids":[1,`, `"input_ids":[01,`, 1),
		"bare fraction":  strings.Replace(s, `"rollout_log_probs":[`, `"rollout_log_probs":[-.5,`, 1),
		"open fraction":  strings.Replace(s, `"rollout_log_probs":[`, `"rollout_log_probs":[-1.,`, 1),
		"float size":     strings.Replace(s, `"group_size":2`, `"group_size":2.0`, 1),
		"missing comma":  strings.Replace(s, `"input_ids":[1,`, `"input_ids":[1 `, 1),
		"bad key":        strings.Replace(s, `"prompt_len"`, `prompt_len`, 1),
		"overflow":       strings.Replace(s, `"rollout_log_probs":[`, `"rollout_log_probs":[-1e39,`, 1),
		"unknown model":  strings.Replace(s, `"model":{`, `"model":{"surprise":1,`, 1),
		"unknown result": strings.Replace(s, `"result":{`, `"result":{"surprise":1,`, 1),
		"bad meta":       strings.Replace(s, `"finish_reason"`, `"meta":{"a":},"finish_reason"`, 1),
		"string reward":  strings.Replace(s, `"reward":`, `"reward":"1",`, 1),
		"bool ok":        strings.Replace(s, `"ok":true`, `"ok":1`, 1),
		"string temp":    strings.Replace(s, `"temperature":0.7`, `"temperature":"0.7"`, 1),
		"negative temp":  strings.Replace(s, `"temperature":0.7`, `"temperature":-0.7`, 1),
		"temp in v1":     strings.Replace(s, `"schema":"toolrl.trajectory/v3","id"`, `"schema":"toolrl.trajectory/v1","id"`, 1),
		"v1 group of v2": strings.Replace(s, `{"schema":"toolrl.trajectory/v3"`, `{"schema":"toolrl.trajectory/v1"`, 1),
		"string iter":    strings.Replace(s, `"policy_version"`, `"iteration":"1","policy_version"`, 1),
		"float iter":     strings.Replace(s, `"policy_version"`, `"iteration":1.5,"policy_version"`, 1),
		"negative iter":  strings.ReplaceAll(s, `"group_size"`, `"iteration":-1,"group_size"`),
		"mixed iters":    strings.Replace(s, `"group_size"`, `"iteration":1,"group_size"`, 1),
		"iter not group": strings.ReplaceAll(s, `"group_size"`, `"iteration":1,"group_size"`),
	} {
		if bad == s {
			t.Fatalf("%s: replacement did not apply", name)
		}
		if _, err := DecodeGroup([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Whitespace anywhere, keys in other case and escaped keys are valid JSON
	// and decode as encoding/json decodes them.
	var indented bytes.Buffer
	if err := encjson.Indent(&indented, data, " ", "\t"); err != nil {
		t.Fatal(err)
	}
	for name, good := range map[string]string{
		"spaced array": strings.Replace(s, `"input_ids":[1,2`, `"input_ids":[ 1 , 2`, 1),
		"indented":     indented.String(),
		"key case":     strings.Replace(s, `"prompt_len"`, `"Prompt_Len"`, 1),
		"escaped key":  strings.Replace(s, `"prompt_len"`, `"prompt\u005flen"`, 1),
		"nulls": strings.Replace(strings.Replace(s, `"finish_reason"`, `"meta":null,"answer":null,"finish_reason"`, 1),
			`"model":{`, `"model":{"hash":null,`, 1),
		"meta":       strings.Replace(s, `"finish_reason"`, `"meta":{"a": [1, {"b":"}"}]},"finish_reason"`, 1),
		"parts case": strings.Replace(s, `"reward":`, `"Reward_Parts":{"Odd \"key\"":-0.25,"b":1e-7},"REWARD":`, 1),
		"null temp":  strings.Replace(s, `"temperature":0.7`, `"temperature":null`, 1),
		"temp case":  strings.Replace(s, `"temperature":0.7`, `"Temperature":1e0`, 1),
		"v1": strings.ReplaceAll(strings.ReplaceAll(s, `"temperature":0.7,`, ""),
			`"schema":"toolrl.trajectory/v3"`, `"schema":"toolrl.trajectory/v1"`),
		"iteration": strings.Replace(strings.ReplaceAll(s, `"group_size"`, `"iteration":2,"group_size"`),
			`"policy_version"`, `"Iteration":2,"policy_version"`, 1),
		"null iteration": strings.Replace(s, `"policy_version"`, `"iteration":null,"policy_version"`, 1),
	} {
		if good == s {
			t.Fatalf("%s: replacement did not apply", name)
		}
		want, err := decodeStd[traj.Group]([]byte(good))
		if err != nil {
			t.Fatalf("%s: encoding/json rejects it: %v", name, err)
		}
		got, err := DecodeGroup([]byte(good))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded group differs from encoding/json's", name)
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

// The codec agrees with encoding/json on every shape trajtest draws (calls,
// results, escapes, meta, v1, later iterations, -0, 1e-7): groups encode to
// the same bytes and decode to the same value, and records, written from
// their values or with their trajectory's raw arrays spliced in, are
// encoding/json's bytes and decode back.
func TestCodecMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for iter := 0; iter < 300; iter++ {
		o := trajtest.Options{Size: 1 + rng.IntN(6), Temperature: trajtest.Temperature(0.7)}
		switch iter % 4 {
		case 1:
			o.Temperature = nil // v2 may leave it unknown
		case 2:
			o.Temperature = trajtest.Temperature(1e-7) // encoding/json's exponent form
		case 3:
			o.Iteration = 1 + iter%11 // a later iteration of the closed loop
		}
		g := trajtest.Random(rng, o, trajtest.Shape{Corners: true})
		if iter%6 == 5 && o.Iteration == 0 {
			trajtest.AsV1(g) // old data
		}
		data, err := EncodeGroup(g)
		if err != nil {
			t.Fatal(err)
		}
		if std, _ := encjson.Marshal(g); string(std) != string(data) {
			t.Fatalf("iter %d: EncodeGroup differs from encoding/json:\n%s\n%s", iter, data, std)
		}
		want, err := decodeStd[traj.Group](data)
		if err != nil {
			t.Fatalf("iter %d: encoding/json: %v", iter, err)
		}
		back, raws, err := DecodeGroupArrays(data)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		if !reflect.DeepEqual(*back, want) {
			t.Fatalf("iter %d: decoded group differs from encoding/json's", iter)
		}
		for i := range back.Trajectories {
			tr := back.Trajectories[i]
			line, err := EncodeTrajectory(&tr)
			if err != nil {
				t.Fatal(err)
			}
			if one, err := DecodeTrajectory(line); err != nil || !reflect.DeepEqual(one, tr) {
				t.Fatalf("iter %d trajectory %d: round trip: %v", iter, i, err)
			}
			r := trajtest.Record(tr, float32(rng.NormFloat64()))
			if iter%3 == 0 && len(r.LossMask) > 0 {
				r.KL, r.KLEstimator = make([]float32, len(r.LossMask)), "k3"
				for j := range r.KL {
					r.KL[j] = float32(rng.ExpFloat64()) * float32(r.LossMask[j])
				}
			}
			r.ZeroVariance, r.Stale = iter%5 == 0, iter%7 == 0
			std, err := encjson.Marshal(&r)
			if err != nil {
				t.Fatal(err)
			}
			for _, raw := range []*Arrays{nil, &raws[i]} {
				got, err := AppendRecord(nil, &r, raw)
				if err != nil || string(got) != string(std) {
					t.Fatalf("iter %d record %d (raw %v): %v\n got %s\nwant %s", iter, i, raw != nil, err, got, std)
				}
			}
			back, err := DecodeRecord(std)
			if err != nil {
				t.Fatalf("iter %d record %d: %v", iter, i, err)
			}
			if want, err := decodeStd[traj.AdvantageRecord](std); err != nil || !reflect.DeepEqual(back, want) {
				t.Fatalf("iter %d record %d: decoded record differs from encoding/json's (%v)", iter, i, err)
			}
			// The binary format carries the same record.
			header, err := AppendRecordHeader(nil, &r)
			if err != nil {
				t.Fatal(err)
			}
			arrays, err := BinaryArraysOf(&r)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range RecordArrayFields {
				if bytes.Contains(header, []byte(`"`+name+`"`)) {
					t.Fatalf("iter %d record %d: header carries %s: %s", iter, i, name, header)
				}
			}
			if bin, err := DecodeRecordBinary(header, arrays); err != nil || !reflect.DeepEqual(bin, back) {
				t.Fatalf("iter %d record %d: binary round trip differs (%v)", iter, i, err)
			}
		}
	}
}

// A refused document's error names the field at fault and the group,
// trajectory or record it belongs to, when that was read.
func TestDecodeErrorsNameFieldAndID(t *testing.T) {
	g := trajtest.Group(trajtest.Options{Size: 2, Temperature: trajtest.Temperature(0.7), Rewards: []float64{1, 0}})
	data, _ := EncodeGroup(g)
	s := string(data)
	rec := trajtest.Record(g.Trajectories[1], 0.5)
	rdata, _ := EncodeRecord(&rec)
	rs := string(rdata)
	for _, c := range []struct {
		name string
		err  func() error
		want []string
	}{
		{"group wrong type", func() error {
			_, err := DecodeGroup([]byte(strings.Replace(s, `"rollout_log_probs":[`, `"rollout_log_probs":["x",`, 1)))
			return err
		}, []string{"group job/p", "trajectories[0] (job/p/0)", "rollout_log_probs", "[0]"}},
		{"group unknown field", func() error {
			_, err := DecodeGroup([]byte(strings.Replace(s, `"prompt_len"`, `"surprise":1,"prompt_len"`, 1)))
			return err
		}, []string{"group job/p", `unknown field "surprise"`}},
		{"group overflow", func() error {
			_, err := DecodeGroup([]byte(strings.Replace(s, `"reward":1`, `"reward":1e999`, 1)))
			return err
		}, []string{"group job/p", "reward", "out of range"}},
		{"record wrong type", func() error {
			_, err := DecodeRecord([]byte(strings.Replace(rs, `"advantages":[`, `"advantages":[true,`, 1)))
			return err
		}, []string{"record job/p/1", "advantages"}},
		{"record non-finite", func() error {
			_, err := DecodeRecord([]byte(strings.Replace(rs, `"rollout_log_probs":[`, `"rollout_log_probs":[-1e39,`, 1)))
			return err
		}, []string{"record job/p/1", "rollout_log_probs", "[0]"}},
		{"trajectory unknown field", func() error {
			line, _ := EncodeTrajectory(&g.Trajectories[0])
			_, err := DecodeTrajectory([]byte(strings.Replace(string(line), `"answer"`, `"surprise":1,"answer"`, 1)))
			if !strings.Contains(string(line), `"answer"`) {
				_, err = DecodeTrajectory([]byte(strings.Replace(string(line), `"reward"`, `"surprise":1,"reward"`, 1)))
			}
			return err
		}, []string{"trajectory job/p/0", "surprise"}},
	} {
		err := c.err()
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
	// Encoding refuses what JSON cannot carry, naming the record and field.
	rec.Advantages[0] = float32(math.NaN())
	if _, err := EncodeRecord(&rec); err == nil || !strings.Contains(err.Error(), "job/p/1 advantages[0]") {
		t.Errorf("NaN advantage: %v", err)
	}
}

// The binary format refuses what it cannot carry or does not expect, naming
// the record and the array.
func TestDecodeRecordBinaryRejects(t *testing.T) {
	g := trajtest.Group(trajtest.Options{Size: 2, Temperature: trajtest.Temperature(0.7), Rewards: []float64{1, 0}})
	rec := trajtest.Record(g.Trajectories[1], 0.5)
	header, _ := AppendRecordHeader(nil, &rec)
	good, _ := BinaryArraysOf(&rec)
	full, _ := EncodeRecord(&rec)
	for _, c := range []struct {
		name   string
		header []byte
		edit   func(a *BinaryArrays)
		want   string
	}{
		{"array in the JSON", full, func(*BinaryArrays) {}, "per-token array in the JSON"},
		{"ragged floats", header, func(a *BinaryArrays) { a.Advantages = a.Advantages[:len(a.Advantages)-1] }, "advantages: "},
		{"NaN", header, func(a *BinaryArrays) {
			a.KL = binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.NaN())))
		}, "kl[0]"},
		{"short mask", header, func(a *BinaryArrays) { a.LossMask = a.LossMask[1:] }, "response_mask"},
		{"unknown field", []byte(strings.Replace(string(header), `"mode"`, `"surprise":1,"mode"`, 1)), func(*BinaryArrays) {}, "surprise"},
	} {
		a := good
		a.Advantages = bytes.Clone(good.Advantages)
		c.edit(&a)
		_, err := DecodeRecordBinary(c.header, a)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), rec.TrajectoryID) {
			t.Errorf("%s: %v, want an error naming %s and %q", c.name, err, rec.TrajectoryID, c.want)
		}
	}
	rec.KL = []float32{float32(math.Inf(1))}
	if _, err := BinaryArraysOf(&rec); err == nil || !strings.Contains(err.Error(), "job/p/1 kl[0]") {
		t.Errorf("+Inf kl encoded: %v", err)
	}
}

// FuzzDecodeGroupMatchesEncodingJSON: on any input the decoder accepts what
// encoding/json (unknown fields refused) plus traj's validation accepts, with
// the same value, and refuses what it refuses; it never panics.
func FuzzDecodeGroupMatchesEncodingJSON(f *testing.F) {
	g := trajtest.Random(rand.New(rand.NewPCG(1, 2)), trajtest.Options{Size: 2, Temperature: trajtest.Temperature(0.7)}, trajtest.Shape{Corners: true})
	seed, _ := EncodeGroup(g)
	f.Add(seed)
	f.Add([]byte(`{"schema":"toolrl.trajectory/v1","trajectories":null}`))
	f.Add([]byte(`{"group_id":"a","trajectories":[{"tokens":[1,2],"loss_mask":[1],"logprobs":[-0.5]}]}`))
	f.Add([]byte(toV2(string(seed))))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeGroup(data)
		want, stdErr := decodeStd[traj.Group](data)
		if err == nil && stdErr != nil && oldSpelling(data) {
			// The decoder also reads v1/v2 names, which encoding/json (v3's
			// names) does not: what it read must be what the v3 spelling
			// of it decodes to.
			again, _ := EncodeGroup(&got)
			want, stdErr = decodeStd[traj.Group](again)
		}
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("wire: %v\nencoding/json: %v", err, stdErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded groups differ")
		}
	})
}

// toV2 respells v3 JSON of a group or record the v2 way: the renamed keys,
// the reward object, and the schema strings.
func toV2(s string) string {
	for _, r := range [][2]string{
		{`"toolrl.trajectory/v3"`, `"toolrl.trajectory/v2"`}, {`"toolrl.advantage/v3"`, `"toolrl.advantage/v2"`},
		{`"input_ids":`, `"tokens":`}, {`"response_mask":`, `"loss_mask":`}, {`"rollout_log_probs":`, `"logprobs":`},
		{`"ref_log_prob":`, `"ref_logprobs":`},
	} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	// "reward":X,"reward_parts":{...} -> "reward":{"total":X,"parts":{...}}
	var b strings.Builder
	for {
		i := strings.Index(s, `"reward":`)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len(`"reward":`)
		k := j + strings.IndexAny(s[j:], ",}")
		b.WriteString(s[:j] + `{"total":` + s[j:k])
		s = s[k:]
		if strings.HasPrefix(s, `,"reward_parts":`) {
			end := strings.Index(s, "}") + 1
			b.WriteString(`,"parts":` + s[len(`,"reward_parts":`):end])
			s = s[end:]
		}
		b.WriteString("}")
	}
}

// Schema v2 data, with its names, decodes to what the same v3 data does;
// a v3 record that uses a v2 name, or a record that spells one field both
// ways, is refused with the field and the record named.
func TestSchemaV2NamesStillRead(t *testing.T) {
	g := trajtest.Group(trajtest.Options{Size: 2, Temperature: trajtest.Temperature(0.7), Rewards: []float64{1, 0},
		Sample: func(i int, t *traj.Trajectory) {
			t.RefLogprobs = slices.Clone(t.Logprobs)
			t.Reward.Parts = map[string]float64{"outcome": t.Reward.Total}
		}})
	data, _ := EncodeGroup(g)
	v3 := string(data)
	v2 := toV2(v3)
	for _, name := range []string{`"tokens":`, `"loss_mask":`, `"logprobs":`, `"ref_logprobs":`, `"reward":{"total":`, `"parts":{`} {
		if !strings.Contains(v2, name) {
			t.Fatalf("v2 group has no %s: %s", name, v2)
		}
	}
	got, err := DecodeGroup([]byte(v2))
	if err != nil {
		t.Fatalf("v2 group: %v", err)
	}
	want := *g
	want.Schema = traj.TrajectorySchemaV2
	want.Trajectories = slices.Clone(g.Trajectories)
	for i := range want.Trajectories {
		want.Trajectories[i].Schema = traj.TrajectorySchemaV2
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("v2 group decodes to\n%+v\nwant\n%+v", got, want)
	}
	rec := trajtest.Record(g.Trajectories[1], 0.5)
	rdata, _ := EncodeRecord(&rec)
	rv3 := string(rdata)
	rv2 := strings.NewReplacer(`"tokens":`, `"input_ids":`, `"logprobs":`, `"old_logprobs":`).Replace(toV2(rv3))
	back, err := DecodeRecord([]byte(rv2))
	wantRec := rec
	wantRec.Schema = traj.AdvantageSchemaV2
	if err != nil || !reflect.DeepEqual(back, wantRec) {
		t.Errorf("v2 record: %v\n%s", err, rv2)
	}
	// Older schemas may take v3's spelling (toolrl writes old records so).
	if _, err := DecodeRecord([]byte(strings.Replace(rv3, `"toolrl.advantage/v3"`, `"toolrl.advantage/v2"`, 1))); err != nil {
		t.Errorf("v2 record spelled as v3: %v", err)
	}

	for _, c := range []struct {
		name, data string
		decode     func([]byte) error
		want       []string
	}{
		{"v3 group with tokens", strings.Replace(v3, `"input_ids":`, `"tokens":`, 1),
			func(b []byte) error { _, err := DecodeGroup(b); return err },
			[]string{"job/p/0", `"input_ids"`, `"tokens"`, "toolrl.trajectory/v3"}},
		{"v3 group with the reward object", strings.Replace(v3, `"reward":1`, `"reward":{"total":1}`, 1),
			func(b []byte) error { _, err := DecodeGroup(b); return err },
			[]string{"job/p/0", `"reward.total"`}},
		{"v3 record with old_logprobs", strings.Replace(rv3, `"rollout_log_probs":`, `"old_logprobs":`, 1),
			func(b []byte) error { _, err := DecodeRecord(b); return err },
			[]string{"record job/p/1", `"rollout_log_probs"`, `"old_logprobs"`}},
		{"both spellings", strings.Replace(rv2, `"loss_mask":`, `"response_mask":[1],"loss_mask":`, 1),
			func(b []byte) error { _, err := DecodeRecord(b); return err },
			[]string{"record job/p/1", `both "loss_mask" and "response_mask"`}},
	} {
		if c.data == v3 || c.data == rv3 || c.data == rv2 {
			t.Fatalf("%s: replacement did not apply", c.name)
		}
		err := c.decode([]byte(c.data))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %s", c.name, err, w)
			}
		}
	}
}

// oldSpelling reports whether data may hold a v1/v2 name (keys match
// case-insensitively).
func oldSpelling(data []byte) bool {
	lower := bytes.ToLower(data)
	for _, k := range []string{`"tokens"`, `"loss_mask"`, `"logprobs"`, `"ref_logprobs"`, `"total"`, `"parts"`} {
		if bytes.Contains(lower, []byte(k)) {
			return true
		}
	}
	return false
}
