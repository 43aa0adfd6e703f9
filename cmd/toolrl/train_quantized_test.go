package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/trainer"
)

// TestTrainDistributedQuantized (#19.3): a distributed `toolrl train
// --redis` with rollout_quantization int8. The driver writes version 0's
// int8 copy (OUT/base/quantized), a worker started from it samples each
// announced version's quantized/ copy (it keeps the form it started with),
// and the driver trains float32 weights on those logprobs: every version
// holds both forms and verifies, and every iteration's rollout_mismatch is
// the int8 gap (mean |Δ| ≥ 1e-5; float32 rollouts give ~1e-8, see
// trainer.TestTrainQuantizedRollouts).
func TestTrainDistributedQuantized(t *testing.T) {
	testsupport.RequireORT(t)
	bin := toolrlBinary(t, "builds the binary; runs three processes")
	const job = "train-int8"
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	dir := t.TempDir()
	cfgPath := writeTrainConfig(t, dir, job, 0)
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("rollout_quantization:\n  bits: 8\n  accuracy_level: 4\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out := filepath.Join(dir, "out")
	driver := startToolrlProc(t, bin, "driver", "train", "--config", cfgPath, "--redis", srv.URL())
	base := filepath.Join(out, trainer.BaseQuantizedDir)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(base, "onnx", "model.onnx")); err == nil {
			break
		}
		if driver.done() || time.Now().After(deadline) {
			t.Fatalf("no %s (driver exited: %v)", base, driver.done())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the rest of the folder after the ONNX file
	startToolrlProc(t, bin, "advantage service", "advantage", "serve", "--redis", srv.URL(), "--job", job, "--listen", "")
	startToolrlProc(t, bin, "worker", "rollout", "--model", base, "--redis", srv.URL(),
		"--job", job, "--worker", "--follow", "--watch", "redis", "--group-size", strconv.Itoa(smallGroupSize),
		"--max-new-tokens", strconv.Itoa(smallMaxNewTokens), "--seed", "1", "--batch", "32", "--threads", "1")
	if code := driver.wait(3 * time.Minute); code != 0 {
		t.Fatalf("driver exit %d", code)
	}
	s, err := policystore.OpenReadOnly(filepath.Join(out, trainer.PolicyDir))
	if err != nil {
		t.Fatal(err)
	}
	for n := int64(1); n <= smallIterations; n++ {
		v, err := s.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := policystore.Verify(context.Background(), v); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(v.Dir, policystore.QuantizedForm, "onnx", "model.onnx")); err != nil {
			t.Fatalf("version %d has no quantized form: %v", n, err)
		}
	}
	ms := testsupport.ReadJSONLines[trainer.IterationMetrics](t, filepath.Join(out, trainer.MetricsFile))
	if len(ms) != smallIterations {
		t.Fatalf("%d metrics lines, want %d", len(ms), smallIterations)
	}
	for _, m := range ms {
		t.Logf("iteration %d (v%d): rollout_mismatch %+v", m.Iteration, m.RolloutVersion, m.Learner.Mismatch)
		if m.Learner.Mismatch.MeanAbs < 1e-5 {
			t.Errorf("iteration %d: rollout_mismatch mean |Δ| %g: the worker did not sample the int8 copy", m.Iteration, m.Learner.Mismatch.MeanAbs)
		}
	}
}
