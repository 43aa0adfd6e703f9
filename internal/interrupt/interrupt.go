// Package interrupt is toolrl's one handler of Ctrl-C (SIGINT) and SIGTERM
// for a run: the first signal asks the run to stop cleanly (its context is
// cancelled: it finishes what is in flight, flushes its output and writes
// its summary), the second abandons it. Every verb that waits uses it.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Watch is the signal watch of one run. Stop ends it.
type Watch struct {
	ctx       context.Context
	cancel    context.CancelFunc
	abandoned chan struct{}
	done      chan struct{}
	wg        sync.WaitGroup
	stop      func() // stops the delivery of signals to the watch
	once      sync.Once
}

// Start watches SIGINT and SIGTERM for a run under parent. On the first
// signal it calls onFirst (when set: say what happens now) and cancels
// Context. On the second it calls onSecond and closes Abandoned; with
// onSecond nil it stops catching signals after the first instead, so that
// a second one ends the process as an unhandled signal does (a run that
// cannot abandon its work in an orderly way is never stuck behind a
// handler).
func Start(parent context.Context, onFirst, onSecond func()) *Watch {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	return start(parent, signals, func() { signal.Stop(signals) }, onFirst, onSecond)
}

func start(parent context.Context, signals <-chan os.Signal, stopNotify func(), onFirst, onSecond func()) *Watch {
	ctx, cancel := context.WithCancel(parent)
	w := &Watch{ctx: ctx, cancel: cancel, abandoned: make(chan struct{}), done: make(chan struct{}), stop: stopNotify}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		select {
		case <-w.done:
			return
		case <-signals:
		}
		if onFirst != nil {
			onFirst()
		}
		if onSecond == nil {
			w.stopNotify()
		}
		cancel()
		if onSecond == nil {
			return
		}
		select {
		case <-w.done:
			return
		case <-signals:
		}
		onSecond()
		close(w.abandoned)
	}()
	return w
}

func (w *Watch) stopNotify() { w.once.Do(w.stop) }

// Context is cancelled by the first signal (or when parent is, or by Stop).
func (w *Watch) Context() context.Context { return w.ctx }

// Abandoned is closed by the second signal when Start had an onSecond.
func (w *Watch) Abandoned() <-chan struct{} { return w.abandoned }

// Stop ends the watch: signals are no longer caught, Context is cancelled
// and the watch's goroutine has returned. Call it when the run returns.
func (w *Watch) Stop() {
	w.stopNotify()
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	w.cancel()
}
