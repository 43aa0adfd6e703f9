package policystore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashStoreEnv names the store directory of the publisher child process;
// TestCrashPublisher does nothing without it.
const crashStoreEnv = "TOOLRL_POLICYSTORE_CRASH_STORE"

// TestCrashPublisher is the child process of TestPublishSurvivesSIGKILL, not
// a test of its own: it opens the store, prints "ready" and publishes
// versions slowly (several MB each, written in chunks with pauses) until it
// is killed.
func TestCrashPublisher(t *testing.T) {
	dir := os.Getenv(crashStoreEnv)
	if dir == "" {
		t.Skip("the child process of TestPublishSurvivesSIGKILL")
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash publisher:", err)
		os.Exit(3)
	}
	s, err := Open(dir)
	if err != nil {
		fail(err)
	}
	fmt.Println("ready")
	for {
		n := int64(1)
		if v, err := s.Latest(); err == nil {
			n = v.Number + 1
		} else if !errors.Is(err, ErrNoVersion) {
			fail(err)
		}
		if _, err := s.Publish(context.Background(), n, json.RawMessage(`{"writer":"child"}`), slowModel(n)); err != nil {
			fail(err)
		}
	}
}

// slowModel writes a model folder of about 4 MB in 256 KB chunks with a
// pause after each, so that a kill lands inside a write as often as in the
// hashing, fsyncs and renames.
func slowModel(n int64) func(dir string) error {
	return func(dir string) error {
		chunk := bytes.Repeat([]byte{byte(n), byte(n >> 8), 0x5a}, 256<<10/3)
		files := []struct {
			name   string
			chunks int
		}{{"config.json", 0}, {"model.safetensors", 10}, {"onnx/model.onnx", 4}, {"optimizer.bin", 2}}
		for _, f := range files {
			path := filepath.Join(dir, filepath.FromSlash(f.name))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			out, err := os.Create(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, `{"version":%d}`, n)
			for i := 0; i < f.chunks; i++ {
				if _, err := out.Write(chunk); err != nil {
					out.Close()
					return err
				}
				time.Sleep(300 * time.Microsecond)
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestPublishSurvivesSIGKILL kills a publishing child process at a range of
// moments and checks after each kill that Open recovers the store, `latest`
// is absent or names a version Verify accepts, it never goes backwards, and a
// new Publish works.
func TestPublishSurvivesSIGKILL(t *testing.T) {
	if os.Getenv(crashStoreEnv) != "" {
		t.Skip("in the child process")
	}
	dir := t.TempDir()
	delays := []time.Duration{-1, 0, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
		20 * time.Millisecond, 35 * time.Millisecond, 50 * time.Millisecond, 80 * time.Millisecond,
		120 * time.Millisecond, 200 * time.Millisecond}
	var prev, childPublished int64
	var leftTmp, leftRenamed int
	for i := 0; i < len(delays); i++ {
		delay := delays[i]
		killChild(t, dir, delay)

		// What the kill left, before Open repairs it.
		tmp := leftovers(t, dir)
		leftTmp += len(tmp)
		r, err := OpenReadOnly(dir)
		if err != nil {
			t.Fatal(err)
		}
		before, err := r.Latest()
		if err != nil && !errors.Is(err, ErrNoVersion) {
			t.Fatalf("kill %d (after %v): a reader finds a broken latest: %v", i, delay, err)
		}
		if ns, _ := r.versions(); len(ns) > 0 && ns[len(ns)-1] > before.Number {
			leftRenamed++
		}

		s, err := Open(dir)
		if err != nil {
			t.Fatalf("kill %d (after %v): Open: %v", i, delay, err)
		}
		if tmp := leftovers(t, dir); len(tmp) > 0 {
			t.Fatalf("kill %d: Open left %q", i, tmp)
		}
		latest := int64(0)
		v, err := s.Latest()
		switch {
		case errors.Is(err, ErrNoVersion):
		case err != nil:
			t.Fatalf("kill %d (after %v): Latest: %v", i, delay, err)
		default:
			if err := Verify(context.Background(), v); err != nil {
				t.Fatalf("kill %d (after %v): latest does not verify: %v", i, delay, err)
			}
			latest = v.Number
		}
		if latest < prev {
			t.Fatalf("kill %d: latest went back from %d to %d", i, prev, latest)
		}
		childPublished += latest - prev
		next, err := s.Publish(context.Background(), latest+1, json.RawMessage(`{"writer":"parent"}`), writeModel(1<<16, uint64(latest+1)))
		if err != nil {
			t.Fatalf("kill %d: Publish(%d) after the kill: %v", i, latest+1, err)
		}
		if err := Verify(context.Background(), next); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		s.Close()
		prev = latest + 1
		// Under heavy load the child may not finish a publish within the
		// planned delays: wait longer until it has, so that the test always
		// covers kills between publishes too.
		if i == len(delays)-1 && childPublished == 0 && delay < 3*time.Second {
			delays = append(delays, 2*delay)
		}
	}
	if childPublished == 0 {
		t.Fatal("the child never completed a publish before being killed")
	}
	t.Logf("%d kills: the children published %d versions; kills left %d temporaries and %d renamed but unpublished versions",
		len(delays), childPublished, leftTmp, leftRenamed)
}

// killChild starts the publisher child on dir, waits until it has opened the
// store (unless delay < 0: then it kills at once), sleeps delay and SIGKILLs
// it.
func killChild(t *testing.T, dir string, delay time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashPublisher$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashStoreEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if delay >= 0 {
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if strings.TrimSpace(sc.Text()) == "ready" {
					ready <- true
					return
				}
			}
			ready <- false
		}()
		select {
		case ok := <-ready:
			if !ok {
				cmd.Wait()
				t.Fatalf("child ended before it was ready: %s", stderr.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child not ready after 30s: %s", stderr.String())
		}
		time.Sleep(delay)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("child: %v (want killed by SIGKILL); stderr: %s", err, stderr.String())
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended on its own (%v) before the kill: %s", err, stderr.String())
	}
}
