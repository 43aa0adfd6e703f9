//go:build ignore

// train_overcall trains models/calc-overcall: the calc tokenizer (the same
// bytes as models/calc/tokenizer.json) and a policy under OvercallPolicyOptions
// (docs/calc.md, "A second policy"). `make model-overcall` runs it:
//
//	GOEXPERIMENT=simd go run recipe/calcdata/train_overcall.go -out DIR
//
// It is a file of its own (build tag ignore), not a command of toolrl's, so
// that the second policy's recipe lives beside its data.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"

	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/recipe/calcdata"
)

func main() {
	out := flag.String("out", "out/calc-overcall/model", "model folder to write")
	steps := flag.Int("steps", 0, "optimiser steps (0: OvercallPolicyOptions')")
	snapDir := flag.String("snapshot-dir", "", "write intermediate model folders here (step-NNNNNN, every 1000 steps)")
	flag.Parse()
	if err := run(*out, *steps, *snapDir); err != nil {
		slog.Error("train_overcall", "err", err)
		os.Exit(1)
	}
}

func run(out string, steps int, snapDir string) error {
	tok, err := calcdata.TrainTokenizer(calcdata.VocabSize)
	if err != nil {
		return err
	}
	o := calcdata.OvercallPolicyOptions()
	if steps > 0 {
		o.Train.Steps = steps
	}
	if snapDir != "" {
		o.Train.SnapshotEvery = 1000
		o.Snapshot = calcdata.SnapshotTo(snapDir, tok)
	}
	m, res, err := calcdata.TrainPolicy(context.Background(), tok, o)
	if err != nil {
		return err
	}
	slog.Info("trained", "steps", res.Steps, "loss", res.LastLoss, "eval_loss", res.EvalLoss, "elapsed", res.Elapsed.String(), "gemm", train.KernelName())
	return calcdata.WriteModel(out, m, tok)
}
