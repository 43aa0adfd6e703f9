package learner

import (
	"math"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/toolrl/toolrl/internal/strictyaml"
	"github.com/toolrl/toolrl/setting"
)

// TestDefaultOptions: the defaults derived from Spec's declarations are
// exactly the values DefaultOptions held as literals before Spec (the
// floats bit for bit).
func TestDefaultOptions(t *testing.T) {
	want := Options{
		Loss: LossConfig{ClipLow: 0.2, ClipHigh: 0.28, DualClip: 3, Agg: TokenMean, NormLength: 256},
		LR:   1e-4, WeightDecay: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8,
		ClipNorm: 1, Minibatches: 1, Epochs: 1, MaxStaleness: 1, MicroBatchTokens: 4096,
	}
	got := DefaultOptions()
	if got != want {
		t.Fatalf("DefaultOptions() = %+v, want %+v", got, want)
	}
	for _, p := range [][2]float64{
		{got.LR, want.LR}, {got.WeightDecay, want.WeightDecay}, {got.Beta1, want.Beta1}, {got.Beta2, want.Beta2},
		{got.Eps, want.Eps}, {got.ClipNorm, want.ClipNorm}, {got.Loss.ClipLow, want.Loss.ClipLow},
		{got.Loss.ClipHigh, want.Loss.ClipHigh}, {got.Loss.DualClip, want.Loss.DualClip},
		{got.Loss.TISCap, want.Loss.TISCap}, {got.Loss.KLBeta, want.Loss.KLBeta},
	} {
		if math.Float64bits(p[0]) != math.Float64bits(p[1]) {
			t.Errorf("%v is not bit-identical to %v", p[0], p[1])
		}
	}
	if DefaultLossConfig() != want.Loss {
		t.Errorf("DefaultLossConfig() = %+v, want %+v", DefaultLossConfig(), want.Loss)
	}
}

// TestSpecExplicitZeroIsASetting: kl_beta: 0 in a file and --kl-beta 0 on
// the command line are settings (0, by that layer), not the default; a
// dual_clip of 0 turns the dual clip off instead of meaning the default 3.
func TestSpecExplicitZeroIsASetting(t *testing.T) {
	var file Spec
	if err := strictyaml.Decode([]byte("kl_beta: 0\ndual_clip: 0\n"), &file); err != nil {
		t.Fatal(err)
	}
	var flags Spec
	fs := pflag.NewFlagSet("learn", pflag.ContinueOnError)
	setting.Bind(fs, &flags)
	if err := fs.Parse([]string{"--kl-beta", "0", "--tis-cap", "0"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec *Spec
		src  setting.Source
	}{{&file, setting.File}, {&flags, setting.Flag}} {
		if !c.spec.KLBeta.IsSet() || c.spec.KLBeta.Get() != 0 || c.spec.KLBeta.Source() != c.src {
			t.Errorf("kl_beta 0 from the %s: %+v, want set to 0 by it", c.src, c.spec.KLBeta)
		}
		if c.spec.LR.IsSet() {
			t.Errorf("lr is set (%v) though no layer gave it", c.spec.LR)
		}
	}
	o, err := file.Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Loss.KLBeta != 0 || o.Loss.DualClip != 0 || o.LR != 1e-4 {
		t.Errorf("options %+v: want kl_beta 0, dual_clip 0 (off) and the default lr", o)
	}
	// Resolving does not change the spec: its record keeps what the layers set.
	got := map[string]string{}
	for _, e := range setting.Entries(&file) {
		got[e.Key] = e.Value + " (" + string(e.Source) + ")"
	}
	if len(got) != 2 || got["kl_beta"] != "0 (file)" || got["dual_clip"] != "0 (file)" {
		t.Errorf("entries %v, want kl_beta and dual_clip, 0 from the file", got)
	}
}

// TestSpecErrorsNameTheSetting: an unusable value is named by its flag when
// a flag set it, by its key under learner: otherwise.
func TestSpecErrorsNameTheSetting(t *testing.T) {
	var file Spec
	if err := strictyaml.Decode([]byte("lr: 0\n"), &file); err != nil {
		t.Fatal(err)
	}
	if _, err := file.Options(); err == nil || !strings.HasPrefix(err.Error(), "learner.lr 0: want a finite value > 0") {
		t.Errorf("lr: 0 from a file: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--lr", "0"}, "--lr 0: want a finite value > 0"},
		{[]string{"--clip-low", "1.5"}, "--clip-low 1.5: want 0 < ε < 1"},
		{[]string{"--dual-clip", "0.5"}, "--dual-clip 0.5: want c > 1"},
		{[]string{"--loss-agg", "sum"}, `--loss-agg: loss aggregation "sum"`},
		{[]string{"--loss-agg", "seq-mean-token-sum-norm", "--loss-norm-length", "0"}, "--loss-norm-length 0: want > 0"},
		{[]string{"--epochs", "0"}, "--epochs 0: want ≥ 1"},
		{[]string{"--micro-batch-tokens", "0"}, "--micro-batch-tokens 0: want ≥ 1"},
	} {
		var s Spec
		fs := pflag.NewFlagSet("learn", pflag.ContinueOnError)
		setting.Bind(fs, &s)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Options(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	var bad Spec
	if err := strictyaml.Decode([]byte("lrr: 0.1\n"), &bad); err == nil || !strings.Contains(err.Error(), "lrr") {
		t.Errorf("unknown key: %v", err)
	}
}
