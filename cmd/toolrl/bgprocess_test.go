package main

import (
	"os/exec"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
)

// bgProcess is a toolrl process a test runs in the background (a worker, a
// learner) while it drives it: its output is captured, done is closed once it
// has exited (err is Wait's result), and it is killed at the test's cleanup
// if it is still running.
type bgProcess struct {
	cmd            *exec.Cmd
	stdout, stderr testsupport.LockedBuffer
	done           chan struct{}
	err            error
}

// startBackground starts bin with args.
func startBackground(t *testing.T, bin string, args ...string) *bgProcess {
	t.Helper()
	p := &bgProcess{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// fatalf fails the test with the process's output so far.
func (p *bgProcess) fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf(format+"\nstdout:\n%s\nstderr:\n%s", append(args, p.stdout.String(), p.stderr.String())...)
}
