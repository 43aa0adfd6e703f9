package serve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/internal/metricsserver"
	"github.com/toolrl/toolrl/internal/testsupport"
)

// freeAddr returns a loopback address no one listens on (now).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestRunServesMetricsAndStops: Run connects, computes the job's groups,
// serves /metrics (with the build it was given) and /healthz on Listen,
// and on cancellation returns nil and stops serving.
func TestRunServesMetricsAndStops(t *testing.T) {
	const job = "runjob"
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connectTest(t, r.URL())
	var logs testsupport.LockedBuffer
	addr := freeAddr(t)
	opts := RunOptions{Options: testServiceOptions(job), Listen: addr, Build: metricsserver.Build{Version: "v0.0.0-runtest", Revision: "abc123"}}
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, r.URL(), opts) }()
	if err := produce(ctx, client, job, 5, 100); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all groups done", 30*time.Second, func() bool { return doneCount(client, job) == 5 })
	if body := get(t, "http://"+addr+"/metrics"); !strings.Contains(body, `version="v0.0.0-runtest"`) || !strings.Contains(body, "toolrl_advantage_") {
		t.Errorf("/metrics lacks the build or the service's series:\n%s", body)
	}
	waitFor(t, "healthy", 10*time.Second, func() bool { return strings.HasPrefix(get(t, "http://"+addr+"/healthz"), "200") })
	if l := logs.String(); !strings.Contains(l, `msg="advantage service" redis=`) || !strings.Contains(l, "job="+job) {
		t.Errorf("log lacks the service line:\n%s", l)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancellation: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("Listen address still held after Run returned: %v", err)
	}
	ln.Close()
}

// TestRunRefusals: options New refuses and a Listen address that cannot be
// served are OptionsErrors (Listen set for the second); an unreachable
// Redis is not.
func TestRunRefusals(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()

	opts := RunOptions{Options: testServiceOptions("j"), Listen: ""}
	opts.Logger = quiet
	err := Run(ctx, "redis://127.0.0.1:1", opts)
	var refused *OptionsError
	if err == nil || errors.As(err, &refused) {
		t.Errorf("unreachable Redis: %v, want an error that is not an OptionsError", err)
	}

	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	opts.RecordFormat = "xml"
	err = Run(ctx, r.URL(), opts)
	if !errors.As(err, &refused) || refused.Listen || !strings.Contains(err.Error(), `record format "xml"`) {
		t.Errorf("record format xml: %v, want an OptionsError naming it", err)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	opts.RecordFormat, opts.Listen = "", busy.Addr().String()
	err = Run(ctx, r.URL(), opts)
	if !errors.As(err, &refused) || !refused.Listen || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Errorf("busy listen address: %v, want an OptionsError with Listen naming it", err)
	}
}
