package interrupt

import (
	"context"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s not closed", what)
	}
}

// The first signal cancels the run's context (after onFirst); the second
// calls onSecond and closes Abandoned.
func TestTwoSignals(t *testing.T) {
	signals := make(chan os.Signal, 2)
	var first, second atomic.Int32
	var stopped atomic.Bool
	w := start(context.Background(), signals, func() { stopped.Store(true) }, func() { first.Add(1) }, func() { second.Add(1) })
	defer w.Stop()
	select {
	case <-w.Context().Done():
		t.Fatal("cancelled before any signal")
	case <-w.Abandoned():
		t.Fatal("abandoned before any signal")
	default:
	}
	signals <- syscall.SIGINT
	waitClosed(t, "context after the first signal", w.Context().Done())
	if first.Load() != 1 || second.Load() != 0 || stopped.Load() {
		t.Fatalf("after one signal: onFirst %d, onSecond %d, signals released %v", first.Load(), second.Load(), stopped.Load())
	}
	signals <- syscall.SIGTERM
	waitClosed(t, "Abandoned after the second signal", w.Abandoned())
	if second.Load() != 1 {
		t.Fatalf("onSecond called %d times", second.Load())
	}
}

// Without onSecond the watch lets go of the signals after the first, so the
// second one ends the process the default way.
func TestWithoutSecondHandlerReleasesSignals(t *testing.T) {
	signals := make(chan os.Signal, 2)
	var stopped atomic.Int32
	w := start(context.Background(), signals, func() { stopped.Add(1) }, nil, nil)
	signals <- syscall.SIGINT
	waitClosed(t, "context", w.Context().Done())
	w.Stop()
	if stopped.Load() != 1 {
		t.Fatalf("signals released %d times, want once", stopped.Load())
	}
}

// Stop without a signal ends the watch's goroutine and cancels the context;
// the parent's cancellation reaches the context too.
func TestStopAndParent(t *testing.T) {
	signals := make(chan os.Signal, 2)
	w := start(context.Background(), signals, func() {}, nil, func() {})
	w.Stop()
	waitClosed(t, "context after Stop", w.Context().Done())
	w.Stop() // twice is fine

	parent, cancel := context.WithCancel(context.Background())
	w = start(parent, signals, func() {}, nil, nil)
	defer w.Stop()
	cancel()
	waitClosed(t, "context after the parent's cancel", w.Context().Done())
}
