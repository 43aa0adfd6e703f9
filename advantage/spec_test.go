package advantage

import (
	"math"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/toolrl/toolrl/internal/strictyaml"
	"github.com/toolrl/toolrl/setting"
)

// TestDefaultConfig: the defaults derived from Spec's and StalenessSpec's
// declarations are the tool-use credit issue #26 measured (step groups,
// Dr.GRPO, the answer's sign kept; docs/experiment.md) and otherwise the
// values DefaultConfig held as literals before Spec (eps bit for bit).
func TestDefaultConfig(t *testing.T) {
	want := Config{Mode: ModeStepGroup, Estimator: EstimatorDrGRPO, Eps: 1e-6, ProcessWeight: 1, Gamma: 1, MaxStaleness: -1, KeepOutcomeSign: true}
	got := DefaultConfig()
	if got != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if math.Float64bits(got.Eps) != math.Float64bits(1e-6) {
		t.Errorf("eps %v is not bit-identical to 1e-6", got.Eps)
	}
}

// TestSpecLayers: a file's and the flags' values are settings, an explicit
// 0 included; an unset key takes its default; an unusable value is named by
// its flag when a flag set it, by its key under advantage: otherwise.
func TestSpecLayers(t *testing.T) {
	var file Spec
	if err := strictyaml.Decode([]byte("mode: hybrid\nprocess_weight: 0\nkl: k3\n"), &file); err != nil {
		t.Fatal(err)
	}
	var flags Spec
	var stale StalenessSpec
	fs := pflag.NewFlagSet("advantage", pflag.ContinueOnError)
	setting.Bind(fs, &flags)
	setting.Bind(fs, &stale)
	if err := fs.Parse([]string{"--kl-coef", "0", "--gamma", "0.5", "--max-staleness", "0"}); err != nil {
		t.Fatal(err)
	}
	if v := flags.KLCoef; !v.IsSet() || v.Source() != setting.Flag {
		t.Errorf("--kl-coef 0: %+v, want set by the flag", v)
	}
	setting.Overlay(&file, &flags)
	c, err := file.Config(stale)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Mode: ModeHybrid, Estimator: EstimatorDrGRPO, Eps: 1e-6, ProcessWeight: 0, Gamma: 0.5, KL: KLK3, MaxStaleness: 0, KeepOutcomeSign: true}
	if c != want {
		t.Errorf("config %+v, want %+v", c, want)
	}
	for _, tc := range []struct {
		yaml string
		args []string
		want string
	}{
		{yaml: "mode: sideways\n", want: `advantage.mode "sideways", want outcome, process, hybrid, stepgroup or turns`},
		{args: []string{"--mode", "sideways"}, want: `--mode "sideways", want outcome, process, hybrid, stepgroup or turns`},
		{args: []string{"--kl-coef", "0.1"}, want: "--kl-coef 0.1 needs a KL estimator"},
		{yaml: "gamma: 0\n", want: "advantage.gamma 0, want in (0, 1]"},
		{args: []string{"--eps", "-1"}, want: "--eps -1, want a finite value ≥ 0"},
	} {
		var s Spec
		if tc.yaml != "" {
			if err := strictyaml.Decode([]byte(tc.yaml), &s); err != nil {
				t.Fatal(err)
			}
		}
		fs := pflag.NewFlagSet("advantage", pflag.ContinueOnError)
		setting.Bind(fs, &s)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Config(StalenessSpec{}); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q %v: %v, want %q", tc.yaml, tc.args, err, tc.want)
		}
	}
}
