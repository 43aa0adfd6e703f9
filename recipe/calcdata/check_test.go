package calcdata

import (
	"math"
	"strings"
	"testing"
)

func TestPolicyOptionsCheck(t *testing.T) {
	ok := DefaultPolicyOptions()
	ok.Train.SnapshotEvery = 500
	if err := ok.Check("", false); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, c := range []struct {
		edit       func(*PolicyOptions)
		dir        string
		everyGiven bool
		want       string
	}{
		{func(o *PolicyOptions) { o.Train.LogEvery = 0 }, "", false, "--log-every 0: want ≥ 1 (steps between loss lines)"},
		{func(o *PolicyOptions) { o.Train.SnapshotEvery = -1 }, "/tmp/s", true, "--snapshot-every -1: want ≥ 1"},
		{func(o *PolicyOptions) { o.Model.Heads = 0 }, "", false, "--heads 0: want ≥ 1 (attention heads)"},
		{func(o *PolicyOptions) { o.Train.LR = 0 }, "", false, "--lr 0: want a finite value > 0"},
		{func(o *PolicyOptions) { o.Train.LR = math.Inf(1) }, "", false, "--lr +Inf: want a finite value > 0"},
		{func(o *PolicyOptions) {}, "", true, "--snapshot-every needs --snapshot-dir"},
	} {
		o := ok
		c.edit(&o)
		if err := o.Check(c.dir, c.everyGiven); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	if err := ok.Check("/tmp/s", true); err != nil {
		t.Errorf("--snapshot-every with --snapshot-dir: %v", err)
	}
}
