package llama

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Llama-3.2-1B's rope_scaling: the config every Llama 3.1/3.2 checkpoint ships.
const llama32Rope = `{"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
  "original_max_position_embeddings": 8192, "rope_type": "llama3"}`

func TestParseRopeScalingErrorsNameTheKey(t *testing.T) {
	for raw, want := range map[string]string{
		`{"rope_type": "longrope", "factor": 2}`:                     "longrope",
		`{"type": "su"}`:                                             "default, dynamic, linear, llama3, yarn",
		`{"rope_type": "linear"}`:                                    "factor",
		`{"rope_type": "llama3", "factor": 8, "low_freq_factor": 1}`: "high_freq_factor",
		`{"rope_type": "yarn", "factor": "4"}`:                       "rope_scaling.factor",
		`{"rope_type": "linear", "factor": 0.5}`:                     "factor must be >= 1",
		`[1]`:                                                        "object",
		`{"rope_type": 3}`:                                           "rope_type must be a string",
		`{"type": "yarn", "factor": 4, "truncate": 1}`:               "truncate",
	} {
		_, err := ParseRopeScaling(json.RawMessage(raw))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", raw, err, want)
		}
	}
	for _, raw := range []string{``, `null`, `{"rope_type": "default"}`} {
		rs, err := ParseRopeScaling(json.RawMessage(raw))
		if err != nil || rs.Kind() != RopeDefault {
			t.Errorf("%q: %+v, %v", raw, rs, err)
		}
	}
	// The legacy "type" key is read when rope_type is absent.
	rs, err := ParseRopeScaling(json.RawMessage(`{"type": "linear", "factor": 2}`))
	if err != nil || rs.Kind() != RopeLinear || rs.Factor != 2 {
		t.Errorf("legacy type: %+v, %v", rs, err)
	}
}

// RoPE follows the published formulas: the llama3 band edges, linear
// division, dynamic's growth past max_position_embeddings and yarn's ramp
// ends and attention factor.
func TestRoPEVariants(t *testing.T) {
	cfg, _ := ShapeConfig("tiny") // D = 16
	cfg.RopeTheta = 500000
	cfg.MaxPositionEmbeddings = 64
	plain, a := RoPE(cfg, 0)
	if a != 1 || len(plain) != 8 || plain[0] != 1 {
		t.Fatalf("default: %v %v", plain, a)
	}
	if got := InvFreq(cfg); float64(got[3]) != plain[3] {
		t.Errorf("InvFreq %v differs from RoPE %v", got, plain)
	}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Abs(b) }

	cfg.RopeScaling = json.RawMessage(`{"type": "linear", "factor": 4}`)
	lin, _ := RoPE(cfg, 0)
	for i := range lin {
		if !close(lin[i], plain[i]/4) {
			t.Errorf("linear[%d] = %v, want %v", i, lin[i], plain[i]/4)
		}
	}

	cfg.RopeScaling = json.RawMessage(llama32Rope)
	l3, a := RoPE(cfg, 0)
	for i := range l3 {
		wavelen := 2 * math.Pi / plain[i]
		switch {
		case wavelen < 8192/4.0:
			if !close(l3[i], plain[i]) {
				t.Errorf("llama3 high freq [%d] changed: %v vs %v", i, l3[i], plain[i])
			}
		case wavelen > 8192:
			if !close(l3[i], plain[i]/32) {
				t.Errorf("llama3 low freq [%d] = %v, want /32 = %v", i, l3[i], plain[i]/32)
			}
		default:
			s := (8192/wavelen - 1) / 3
			if want := (1-s)*plain[i]/32 + s*plain[i]; !close(l3[i], want) {
				t.Errorf("llama3 medium [%d] = %v, want %v", i, l3[i], want)
			}
		}
	}
	if a != 1 || l3[7] == plain[7] {
		t.Errorf("llama3 left the lowest frequency alone or scaled attention: %v", a)
	}

	cfg.RopeScaling = json.RawMessage(`{"rope_type": "dynamic", "factor": 2}`)
	dyn, _ := RoPE(cfg, 64)
	for i := range dyn {
		if dyn[i] != plain[i] {
			t.Fatalf("dynamic at max_position_embeddings differs from plain: %v", dyn)
		}
	}
	dyn, _ = RoPE(cfg, 128)
	base := 500000 * math.Pow(2*128/64.0-1, 16.0/14)
	for i := range dyn {
		if want := 1 / math.Pow(base, float64(2*i)/16); !close(dyn[i], want) {
			t.Errorf("dynamic[%d] = %v, want %v", i, dyn[i], want)
		}
	}

	cfg.RopeScaling = json.RawMessage(`{"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 32}`)
	y, a := RoPE(cfg, 0)
	if want := 0.1*math.Log(4) + 1; !close(a, want) {
		t.Errorf("yarn attention factor %v, want %v", a, want)
	}
	if !close(y[0], plain[0]) || !close(y[7], plain[7]/4) {
		t.Errorf("yarn ends: %v (plain %v)", y, plain)
	}
	cfg.RopeScaling = json.RawMessage(`{"rope_type": "yarn", "factor": 4, "attention_factor": 0.5}`)
	if _, a = RoPE(cfg, 0); a != 0.5 {
		t.Errorf("explicit attention_factor: %v", a)
	}
}
