package calcdata

import (
	"fmt"
	"math"
)

// Check refuses the settings TrainPolicy cannot use, naming each by its
// toolrl model train flag: a count that is not ≥ 1 (--log-every 0 was
// once silently 50, --snapshot-every 0 silently no snapshot), a learning
// rate that is not finite and > 0, and --snapshot-every given
// (snapshotEveryGiven) without a snapshot folder (snapshotDir empty).
func (o PolicyOptions) Check(snapshotDir string, snapshotEveryGiven bool) error {
	for _, f := range []struct {
		name  string
		value int
		what  string
	}{
		{"steps", o.Train.Steps, "optimiser steps"}, {"batch", o.Train.BatchSize, "sequences per step"},
		{"examples", o.Examples, "training examples"}, {"log-every", o.Train.LogEvery, "steps between loss lines"},
		{"snapshot-every", o.Train.SnapshotEvery, "steps between snapshots"},
		{"dim", o.Model.Dim, "hidden size"}, {"layers", o.Model.Layers, "decoder layers"},
		{"heads", o.Model.Heads, "attention heads"}, {"kv-heads", o.Model.KVHeads, "key/value heads"},
		{"ff", o.Model.FF, "MLP size"}, {"max-pos", o.Model.MaxPos, "sequence length"},
	} {
		if f.value < 1 {
			return fmt.Errorf("--%s %d: want ≥ 1 (%s)", f.name, f.value, f.what)
		}
	}
	if !(o.Train.LR > 0) || math.IsInf(o.Train.LR, 0) {
		return fmt.Errorf("--lr %g: want a finite value > 0", o.Train.LR)
	}
	if snapshotEveryGiven && snapshotDir == "" {
		return fmt.Errorf("--snapshot-every needs --snapshot-dir (without it no snapshot is written)")
	}
	return nil
}
