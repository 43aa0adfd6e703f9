package python

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tempPrefix starts the name of each run's temp dir, followed by the pid of
// the process that made it: "toolrl-py-<pid>-<random>".
const tempPrefix = "toolrl-py-"

// removeTempDir removes a run's temp dir. The code may have left folders
// without write or search permission (the owner, or root, can give them back)
// and, without a PID namespace, children still writing for a moment after
// the kill: it retries for up to a second and logs what it could not remove.
func removeTempDir(dir string) {
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
		// Give every folder back its owner's permissions, top down so that
		// the walk can enter them. Not as root, who needs none, and whose
		// chmod would follow a symlink the code swapped in meanwhile; any
		// other runner shares its uid with the code, which could chmod
		// those files itself.
		if os.Geteuid() != 0 {
			_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if d != nil && d.IsDir() {
					_ = os.Chmod(path, 0o700)
				}
				return nil
			})
			if err = os.RemoveAll(dir); err == nil {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	slog.Warn("python tool: temp dir not removed", "dir", dir, "err", err)
}

// removeStaleTempDirs removes the temp dirs in root left by toolrl processes
// that no longer run (killed before their runs could clean up).
func removeStaleTempDirs(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := tempDirPid(e.Name())
		if !ok || !e.IsDir() || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			removeTempDir(filepath.Join(root, e.Name()))
		}
	}
}

// tempDirPid returns the pid in a temp dir's (or call cgroup's) name
// "toolrl-py-<pid>-<random>".
func tempDirPid(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	pidText, _, found := strings.Cut(rest, "-")
	if !ok || !found {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}
