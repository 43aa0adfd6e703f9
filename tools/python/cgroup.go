package python

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the cgroup filesystems are mounted: cgroup v2
// (unified) at the root, or cgroup v1 with one folder per controller.
const cgroupRoot = "/sys/fs/cgroup"

// cgroups makes one cgroup per call, with memory and process limits for
// the call as a whole: cgroup v2 (memory.max, memory.swap.max, pids.max)
// where /sys/fs/cgroup is the unified hierarchy and offers the memory and
// pids controllers to the runner's own cgroup, else cgroup v1 (the memory
// and pids hierarchies: memory.limit_in_bytes, memory.memsw.limit_in_bytes,
// pids.max). A call's cgroups are named as its temp dir, so that a runner
// that died leaves cgroups the next one can tell from live ones.
type cgroups struct {
	version int      // 2 or 1
	parents []string // where call cgroups are made: one (v2) or memory and pids (v1)
}

// ownCgroup returns the runner's own cgroup path in a hierarchy: the
// unified one (controller "") or a v1 controller's.
func ownCgroup(controller string) (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		for _, c := range strings.Split(parts[1], ",") {
			if controller != "" && c == controller {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("/proc/self/cgroup names no %q hierarchy", controller)
}

// probeCgroups finds where this runner can make call cgroups and checks it
// by making one; the error says why it cannot.
func probeCgroups() (*cgroups, error) {
	var cg *cgroups
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		own, err := ownCgroup("")
		if err != nil {
			return nil, err
		}
		parent := filepath.Join(cgroupRoot, own)
		ctrl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
		if err != nil {
			return nil, fmt.Errorf("cgroup v2: %w", err)
		}
		if f := strings.Fields(string(ctrl)); !slices.Contains(f, "memory") || !slices.Contains(f, "pids") {
			// Enabling controllers for children is refused while the
			// cgroup holds processes (toolrl itself), unless it is the root.
			if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory +pids"), 0); err != nil {
				return nil, fmt.Errorf("cgroup v2 %s: the memory and pids controllers are not enabled for its children (cgroup.subtree_control %q) and enabling them failed: %w", parent, strings.TrimSpace(string(ctrl)), err)
			}
		}
		cg = &cgroups{version: 2, parents: []string{parent}}
	} else {
		cg = &cgroups{version: 1}
		for _, c := range []string{"memory", "pids"} {
			own, err := ownCgroup(c)
			if err != nil {
				return nil, fmt.Errorf("cgroup v1: %w", err)
			}
			parent := filepath.Join(cgroupRoot, c, own)
			if _, err := os.Stat(filepath.Join(parent, "cgroup.procs")); err != nil {
				return nil, fmt.Errorf("cgroup v1 %s: %w", c, err)
			}
			cg.parents = append(cg.parents, parent)
		}
	}
	call, err := cg.create(tempPrefix+strconv.Itoa(os.Getpid())+"-probe", 64<<20, 8)
	if err != nil {
		return nil, err
	}
	call.remove()
	return cg, nil
}

// callCgroup is one call's cgroup (v2) or pair of cgroups (v1).
type callCgroup struct {
	name string
	dirs []string
}

// create makes the cgroups of one call and sets their limits.
func (c *cgroups) create(name string, memBytes, pids int) (*callCgroup, error) {
	call := &callCgroup{name: name}
	for _, p := range c.parents {
		dir := filepath.Join(p, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			call.remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		call.dirs = append(call.dirs, dir)
	}
	type limit struct {
		dir         int // index in call.dirs
		file, value string
		optional    bool // absent where the kernel has no swap accounting
	}
	mem, procs := strconv.Itoa(memBytes), strconv.Itoa(pids)
	limits := []limit{{0, "memory.max", mem, false}, {0, "memory.swap.max", "0", true}, {0, "pids.max", procs, false}}
	if c.version == 1 {
		// memsw (memory + swap) may not be below limit_in_bytes: set after.
		limits = []limit{{0, "memory.limit_in_bytes", mem, false}, {0, "memory.memsw.limit_in_bytes", mem, true}, {1, "pids.max", procs, false}}
	}
	for _, l := range limits {
		path := filepath.Join(call.dirs[l.dir], l.file)
		if err := os.WriteFile(path, []byte(l.value), 0); err != nil {
			if l.optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			call.remove()
			return nil, fmt.Errorf("cgroup %s: %w", path, err)
		}
	}
	return call, nil
}

// add moves the process pid into the call's cgroups. The sandbox preamble
// waits until /proc/self/cgroup shows it there before it runs the code.
func (cc *callCgroup) add(pid int) error {
	for _, d := range cc.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("cgroup %s: add pid %d: %w", d, pid, err)
		}
	}
	return nil
}

// preambleArg tells the preamble which cgroups to wait for: the name and
// how many hierarchies list it.
func (cc *callCgroup) preambleArg() string {
	return cc.name + ":" + strconv.Itoa(len(cc.dirs))
}

// remove kills every process left in the call's cgroups (those that
// escaped the process group) and removes them; it retries for up to a
// second while the kernel reaps them.
func (cc *callCgroup) remove() {
	for _, d := range cc.dirs {
		_ = os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0) // v2, kernel 5.14+
		var err error
		for attempt := 0; attempt < 100; attempt++ {
			killAll(d)
			if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			slog.Warn("python tool: cgroup not removed", "dir", d, "err", err)
		}
	}
}

// killAll sends SIGKILL to every process of the cgroup dir.
func killAll(dir string) {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeStale removes the call cgroups of toolrl processes that no longer
// run, killing what is left in them: without a PID namespace, the
// processes a call started outlive a toolrl process that was killed.
func (c *cgroups) removeStale() {
	for _, p := range c.parents {
		entries, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if pid, ok := tempDirPid(e.Name()); ok && e.IsDir() && pid != os.Getpid() {
				if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
					(&callCgroup{dirs: []string{filepath.Join(p, e.Name())}}).remove()
				}
			}
		}
	}
}
