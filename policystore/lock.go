package policystore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LockFile is the name of the writer's lock file in the store directory.
const LockFile = ".lock"

// lockWriter takes the exclusive, non-blocking flock on dir/.lock and writes
// the process id into it. The kernel releases the lock when the returned file
// is closed or the process dies, so a killed writer never leaves a stale lock.
func lockWriter(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("policystore: open lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			holder := "unknown"
			if data, rerr := os.ReadFile(path); rerr == nil && len(strings.TrimSpace(string(data))) > 0 {
				holder = strings.TrimSpace(string(data))
			}
			return nil, fmt.Errorf("policystore: %s has another writer (pid %s holds %s); a store has one writer", dir, holder, path)
		}
		return nil, fmt.Errorf("policystore: lock %s: %w", path, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("policystore: write pid to %s: %w", path, err)
	}
	return f, nil
}
