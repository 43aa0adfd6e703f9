// Package python runs model-written Python code in a python3 subprocess
// inside a sandbox: rlimits on CPU time, address space, file size and open
// files, and a cgroup per call for its memory and processes as a whole; no
// network; only fds 0-2 inherited; reads confined to the system folders and
// writes to a fresh temp dir that no other call sees; and the whole process
// tree killed at the deadline or when toolrl dies (docs/tools.md says what
// each kernel feature gives and what is lost without it).
//
// The sandbox is layered from what the host allows, and Runner.Isolation
// says what it got. As root: new network, PID, IPC and mount namespaces (the
// unshare(2) flags, through clone); the sandbox preamble mounts the PID
// namespace's own /proc (so the host's processes and their command lines are
// out of sight), drops to nobody (65534), lowers the rlimits and confines
// writes with Landlock. Unprivileged: a user namespace carries the same
// namespaces when the kernel allows it, and the preamble drops every
// capability after mounting /proc. A seccomp filter (x86_64 and aarch64)
// makes unshare and clone with CLONE_NEWUSER fail, and io_uring (whose
// operations seccomp never sees), and unless the network is allowed,
// socket(2) too; Landlock (ABI 4 and later) denies TCP connect and
// bind; with none of these the network is open and Isolation says so.
package python

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:embed sandbox.py
var preamble string

// Options configure a Runner. Zero values mean the defaults beside them;
// New refuses negative limits.
type Options struct {
	// Interpreter is the python3 to run (default /usr/bin/python3 when it
	// exists, else python3 on PATH). When the runner drops to nobody, the
	// interpreter must be readable by nobody.
	Interpreter string `yaml:"interpreter" json:"interpreter"`
	// CPUSeconds is RLIMIT_CPU (default 5).
	CPUSeconds int `yaml:"cpu_seconds" json:"cpu_seconds"`
	// MemoryMB is the memory limit in MiB (default 512): memory.max of the
	// call's cgroup (all its processes together) where the runner can make
	// cgroups (Isolation.Cgroup), and RLIMIT_AS of each process always.
	MemoryMB int `yaml:"memory_mb" json:"memory_mb"`
	// FileSizeMB is RLIMIT_FSIZE in MiB (default 16).
	FileSizeMB int `yaml:"file_size_mb" json:"file_size_mb"`
	// OpenFiles is RLIMIT_NOFILE (default 64).
	OpenFiles int `yaml:"open_files" json:"open_files"`
	// Processes bounds the processes and threads of a call (default 128):
	// pids.max of the call's cgroup where the runner can make cgroups.
	// Without, it is RLIMIT_NPROC when the code runs as nobody, which counts
	// every process and thread of nobody on the host, so concurrent runs
	// share it; and it is not set for an unprivileged runner, whose own
	// processes it would count.
	Processes int `yaml:"processes" json:"processes"`
	// MaxOutputBytes bounds the stdout and the stderr kept (default 65536 each).
	MaxOutputBytes int `yaml:"max_output_bytes" json:"max_output_bytes"`
	// AllowNetwork turns the network isolation off.
	AllowNetwork bool `yaml:"allow_network" json:"allow_network"`
	// TempRoot is where each run's temp dir is made (default os.TempDir()).
	// When the runner is root the code runs as nobody, who must be able to
	// reach it.
	TempRoot string `yaml:"temp_root" json:"temp_root"`

	// skipModes lists namespace modes ("root", "user") not to try; tests set
	// it to exercise the weaker sandboxes.
	skipModes   []string
	tempRootSet bool
}

// reachableByOthers reports whether every folder from / down to dir can be
// traversed by any user.
func reachableByOthers(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// The defaults of the limits whose zero means "the default".
const (
	defaultCPUSeconds     = 5
	defaultMemoryMB       = 512
	defaultFileSizeMB     = 16
	defaultOpenFiles      = 64
	defaultProcesses      = 128
	defaultMaxOutputBytes = 65536
)

// limits lists the settings whose zero means the default: their yaml key,
// their field and the default.
func (o *Options) limits() []struct {
	key string
	v   *int
	def int
} {
	return []struct {
		key string
		v   *int
		def int
	}{
		{"cpu_seconds", &o.CPUSeconds, defaultCPUSeconds},
		{"memory_mb", &o.MemoryMB, defaultMemoryMB},
		{"file_size_mb", &o.FileSizeMB, defaultFileSizeMB},
		{"open_files", &o.OpenFiles, defaultOpenFiles},
		{"processes", &o.Processes, defaultProcesses},
		{"max_output_bytes", &o.MaxOutputBytes, defaultMaxOutputBytes},
	}
}

// PositiveKeys lists the settings (yaml key, default) whose zero means the
// default: a tool registry refuses them written as 0 or below, naming the
// file, line and key (tools.LoadRegistry; docs/refusals.md), since a written
// 0 would silently become the default.
func (o Options) PositiveKeys() [][2]string {
	var keys [][2]string
	for _, l := range o.limits() {
		keys = append(keys, [2]string{l.key, strconv.Itoa(l.def)})
	}
	return keys
}

func (o Options) withDefaults() Options {
	if o.Interpreter == "" {
		o.Interpreter = "python3"
		if _, err := os.Stat("/usr/bin/python3"); err == nil {
			o.Interpreter = "/usr/bin/python3"
		}
	}
	for _, l := range o.limits() {
		if *l.v == 0 {
			*l.v = l.def
		}
	}
	o.tempRootSet = o.TempRoot != ""
	if o.TempRoot == "" {
		o.TempRoot = os.TempDir()
	}
	return o
}

// Isolation is what the sandbox got on this host.
type Isolation struct {
	// Namespaces is "root" (net+pid+ipc namespaces, run as nobody), "user"
	// (the same inside a user namespace) or "" (none).
	Namespaces string `json:"namespaces"`
	// NetworkIsolated is true when the code cannot reach the network: a
	// network namespace, or Landlock's TCP rules.
	NetworkIsolated bool `json:"network_isolated"`
	// Landlock is the Landlock ABI that confines writes to the temp dir and
	// reads to the system folders (/usr, /bin, /sbin, /lib*, /etc, /proc,
	// a few /dev files and the interpreter's prefix and path: sandbox.py's
	// _readable), refuses ptrace and (ABI 6+) signals to processes outside
	// the call, and with ABI 4+ TCP connect and bind (0: not confined).
	Landlock int `json:"landlock"`
	// Cgroup is the cgroup version of the call's own cgroup, "v2" or "v1",
	// whose memory and process limits hold for the call as a whole (all
	// its processes together); "" where the runner cannot make cgroups:
	// then memory_mb is per process (RLIMIT_AS) and processes counts every
	// process of nobody on the host (RLIMIT_NPROC, shared by concurrent
	// calls), or nothing for an unprivileged runner.
	Cgroup string `json:"cgroup"`
	// Seccomp is true when a seccomp filter makes socket(2) fail (EACCES)
	// and io_uring_setup(2), io_uring_enter(2) and io_uring_register(2)
	// fail (EPERM): a ring's operations (IORING_OP_SOCKET among them) would
	// bypass the filter; ptrace(2), process_vm_readv(2), process_vm_writev(2)
	// and pidfd_getfd(2) fail too (EPERM): another process's memory and fds.
	Seccomp bool `json:"seccomp"`
	// Proc is what the code sees at /proc: "private" (a proc of the
	// sandbox's PID namespace: its own processes only), "hidden" (an empty
	// read-only tmpfs, where the kernel refuses a new proc) or "host" (the
	// host's, without namespaces).
	Proc string `json:"proc"`
	// UserNamespacesDenied is true when a seccomp filter makes unshare(2)
	// and clone(2) with CLONE_NEWUSER fail (EPERM), so that the code cannot
	// gain capabilities in a namespace of its own.
	UserNamespacesDenied bool `json:"user_namespaces_denied"`
	// Notes say what is missing and why.
	Notes []string `json:"notes,omitempty"`
}

// String is a one-line summary for logs.
func (i Isolation) String() string {
	s := fmt.Sprintf("namespaces=%q network_isolated=%v landlock=%d seccomp=%v proc=%s user_namespaces_denied=%v cgroup=%q",
		i.Namespaces, i.NetworkIsolated, i.Landlock, i.Seccomp, i.Proc, i.UserNamespacesDenied, i.Cgroup)
	if len(i.Notes) > 0 {
		s += " (" + strings.Join(i.Notes, "; ") + ")"
	}
	return s
}

// Runner runs code under the sandbox. It is safe for concurrent use.
type Runner struct {
	opts      Options
	interp    string
	isolation Isolation
	attr      func() *syscall.SysProcAttr
	asNobody  bool     // the temp dir is chowned to nobody
	cg        *cgroups // nil: no cgroup per call
	priv      string   // the preamble's PRIV argument: "root", "user" or "none"
}

// nobody is the uid and gid code runs as when the runner is root.
const nobody = 65534

// New probes the host and returns a runner with the strongest sandbox it
// allows. It fails only when python3 cannot run at all.
func New(ctx context.Context, opts Options) (*Runner, error) {
	for _, l := range opts.limits() {
		if *l.v < 0 {
			return nil, fmt.Errorf("python %s: %d, want > 0 (0 for the default %d)", l.key, *l.v, l.def)
		}
	}
	if t := opts.TempRoot; t != "" && (!filepath.IsAbs(t) || filepath.Clean(t) == "/") {
		// Each call's folder is made, and stale ones removed, under it: the
		// file system's root is no place for that, nor a folder that moves
		// with the working directory.
		return nil, fmt.Errorf("python temp_root %q: want an absolute folder other than /", t)
	}
	opts = opts.withDefaults()
	interp, err := exec.LookPath(opts.Interpreter)
	if err != nil {
		return nil, fmt.Errorf("python interpreter %q: %w", opts.Interpreter, err)
	}
	if os.Geteuid() == 0 && !reachableByOthers(opts.TempRoot) {
		// The code runs as nobody, who must reach its temp dir.
		if !opts.tempRootSet && reachableByOthers("/tmp") {
			opts.TempRoot = "/tmp"
		} else {
			return nil, fmt.Errorf("python temp_root %s: not reachable by nobody (every folder on the path needs o+x)", opts.TempRoot)
		}
	}
	r := &Runner{opts: opts, interp: interp}
	removeStaleTempDirs(opts.TempRoot)
	var notes []string
	if !slices.Contains(opts.skipModes, "cgroup") {
		cg, err := probeCgroups()
		if err != nil {
			procs := "processes is not enforced (RLIMIT_NPROC would count the runner's own processes)"
			if os.Geteuid() == 0 {
				procs = "processes is RLIMIT_NPROC of nobody, shared by every concurrent call"
			}
			notes = append(notes, fmt.Sprintf("no cgroup per call (%v): memory_mb holds per process only, and %s", err, procs))
		} else {
			r.cg = cg
			cg.removeStale()
		}
	}
	type mode struct {
		name     string
		asNobody bool
		attr     func() *syscall.SysProcAttr
	}
	// With namespaces the preamble starts privileged in its own mount
	// namespace, mounts the PID namespace's /proc, then drops the privilege
	// (sandbox.py); the PRIV argument is the mode's name.
	var modes []mode
	if !opts.AllowNetwork {
		if os.Geteuid() == 0 {
			modes = append(modes, mode{"root", true, func() *syscall.SysProcAttr {
				return &syscall.SysProcAttr{
					Setpgid:    true,
					Pdeathsig:  syscall.SIGKILL,
					Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWNS,
				}
			}})
		}
		uid, gid := os.Getuid(), os.Getgid()
		modes = append(modes, mode{"user", false, func() *syscall.SysProcAttr {
			return &syscall.SysProcAttr{
				Setpgid:     true,
				Pdeathsig:   syscall.SIGKILL,
				Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWNS,
				UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
				GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
			}
		}})
	}
	// Without namespaces root still drops to nobody, so that the code can
	// neither raise its rlimits nor write where root could.
	root := os.Geteuid() == 0
	modes = append(modes, mode{"", root, func() *syscall.SysProcAttr {
		attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if root {
			attr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
		}
		return attr
	}})
	for _, m := range modes {
		if m.name != "" && slices.Contains(opts.skipModes, m.name) {
			continue
		}
		r.attr, r.asNobody, r.priv = m.attr, m.asNobody, m.name
		if m.name == "" {
			r.priv = "none"
		}
		out, err := r.probe(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if m.name != "" {
				notes = append(notes, fmt.Sprintf("%s namespaces unavailable: %v", m.name, err))
				continue
			}
			return nil, fmt.Errorf("python sandbox probe with %s: %w", interp, err)
		}
		r.isolation = Isolation{Namespaces: m.name, Landlock: out.Landlock, Seccomp: out.Seccomp,
			Proc: out.Proc, UserNamespacesDenied: out.UserNSDenied, Notes: notes}
		if r.cg != nil {
			r.isolation.Cgroup = "v" + strconv.Itoa(r.cg.version)
		}
		break
	}
	iso := &r.isolation
	iso.NetworkIsolated = !opts.AllowNetwork && (iso.Namespaces != "" || iso.Seccomp || iso.Landlock >= 4)
	if opts.AllowNetwork {
		iso.Notes = append(iso.Notes, "network allowed by allow_network")
	} else if !iso.NetworkIsolated {
		iso.Notes = append(iso.Notes, "network NOT isolated: no namespaces, no seccomp and no Landlock ABI >= 4")
	}
	if iso.Landlock == 0 {
		iso.Notes = append(iso.Notes, "writes NOT confined to the temp dir and host files NOT hidden: the kernel has no Landlock")
		if iso.Namespaces == "" {
			iso.Notes = append(iso.Notes, "concurrent calls can read each other's temp dirs: neither a mount namespace nor Landlock")
		}
	}
	if iso.Namespaces == "" {
		left := "live on"
		if r.cg != nil {
			left = "live on until the next runner's sweep of stale call cgroups"
		}
		iso.Notes = append(iso.Notes, "no PID namespace: if toolrl dies during a call, python dies with it (parent-death signal) but processes it started "+left+", and the call's temp dir stays until the next runner's sweep")
	}
	if iso.Proc == "host" && iso.Landlock == 0 {
		iso.Notes = append(iso.Notes, "/proc NOT private: the code can read the host's process list and command lines")
	} else if iso.Proc == "host" {
		iso.Notes = append(iso.Notes, "/proc is the host's, but Landlock lets the code read only its own entry (/proc/self)")
	}
	if !iso.UserNamespacesDenied {
		iso.Notes = append(iso.Notes, "user namespaces NOT denied: no seccomp on this machine type")
	}
	return r, nil
}

// Isolation says what the sandbox got on this host.
func (r *Runner) Isolation() Isolation { return r.isolation }

type probeOut struct {
	Landlock     int    `json:"landlock"`
	Seccomp      bool   `json:"seccomp"`
	UserNSDenied bool   `json:"userns_denied"`
	Proc         string `json:"proc"`
	UID          int    `json:"uid"`
}

func (r *Runner) probe(ctx context.Context) (probeOut, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := r.Run(ctx, "", true)
	if err != nil {
		return probeOut{}, err
	}
	if out.ExitCode != 0 {
		return probeOut{}, fmt.Errorf("exit %d: %s", out.ExitCode, lastLines(out.Stderr, 3))
	}
	var p probeOut
	if err := json.Unmarshal([]byte(out.Stdout), &p); err != nil {
		return probeOut{}, fmt.Errorf("probe output %q: %w", out.Stdout, err)
	}
	return p, nil
}

// Output is what one run printed and how it ended.
type Output struct {
	Stdout, Stderr string
	// ExitCode is the exit status, or -1 when a signal killed the process.
	ExitCode int
	// Signal names the signal that killed the process, if one did.
	Signal string
	// Truncated is true when stdout or stderr exceeded MaxOutputBytes.
	Truncated bool
}

// Run runs code as the __main__ module in a fresh temp dir (removed
// afterwards, however the run ends; New removes those left by toolrl
// processes that died). With namespaces the preamble moves the dir into a
// tmpfs of the sandbox's mount namespace, mounted over the temp root: the
// host's copy is gone once the code starts, and the sandbox's goes with its
// last process. Every mode sets a parent-death signal (SIGKILL), which the
// preamble arms again after its uid change: the sandbox dies with toolrl. At ctx's deadline the process group (and, with namespaces,
// every process of the sandbox) is killed and Run returns ctx.Err().
// probe=true runs the sandbox preamble's self-report instead of code.
func (r *Runner) Run(ctx context.Context, code string, probe bool) (Output, error) {
	dir, err := os.MkdirTemp(r.opts.TempRoot, tempPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return Output{}, fmt.Errorf("python temp dir: %w", err)
	}
	// Removed however the run ends (exit, crash, deadline), after the
	// process group is killed, even where the code took its own
	// permissions away.
	defer removeTempDir(dir)
	main := filepath.Join(dir, "main.py")
	if err := os.WriteFile(main, []byte(code), 0o644); err != nil {
		return Output{}, fmt.Errorf("python temp dir: %w", err)
	}
	if r.asNobody {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			return Output{}, fmt.Errorf("python temp dir: %w", err)
		}
	}
	net := "0"
	if r.opts.AllowNetwork {
		net = "1"
	}
	// -u: unbuffered, so that what the code printed before a crash, a kill
	// or the deadline reaches the pipe (-I ignores PYTHONUNBUFFERED).
	args := []string{"-I", "-B", "-u", "-c", preamble, dir,
		strconv.Itoa(r.opts.CPUSeconds),
		strconv.Itoa(r.opts.MemoryMB << 20),
		strconv.Itoa(r.opts.FileSizeMB << 20),
		strconv.Itoa(r.opts.OpenFiles),
		net,
		"0", // RLIMIT_NPROC: see Options.Processes
		r.priv,
		"-", // the call's cgroups, which the preamble waits to be in
	}
	var cg *callCgroup
	if r.cg != nil {
		// The limits of the call as a whole; RLIMIT_NPROC, which counts
		// every process of nobody on the host, is not set.
		cg, err = r.cg.create(filepath.Base(dir), r.opts.MemoryMB<<20, r.opts.Processes)
		if err != nil {
			return Output{}, fmt.Errorf("python: %w", err)
		}
		defer cg.remove()
		args[len(args)-1] = cg.preambleArg()
	} else if r.asNobody {
		args[len(args)-3] = strconv.Itoa(r.opts.Processes)
	}
	if probe {
		args = append(args, "--probe")
	}
	cmd := exec.CommandContext(ctx, r.interp, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8", "PYTHONIOENCODING=utf-8"}
	cmd.SysProcAttr = r.attr()
	cmd.Cancel = func() error {
		// The whole process group, not only python.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// Children that escaped the group may hold the pipes: stop waiting.
	cmd.WaitDelay = 20 * time.Millisecond
	stdout := &limitedBuffer{max: r.opts.MaxOutputBytes}
	stderr := &limitedBuffer{max: r.opts.MaxOutputBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Start()
	if err == nil && cg != nil {
		if err = cg.add(cmd.Process.Pid); err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return Output{}, fmt.Errorf("python: %w", err)
		}
	}
	if err == nil {
		err = cmd.Wait()
	}
	out := Output{Stdout: stdout.String(), Stderr: stderr.String(), Truncated: stdout.truncated || stderr.truncated}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	// Kill what the code may have left in the group after python exited.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		out.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			out.Signal = ws.Signal().String()
		}
	case errors.Is(err, exec.ErrWaitDelay):
	default:
		return out, fmt.Errorf("start python: %w", err)
	}
	return out, nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) String() string { return b.buf.String() }

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Summary turns an output into the text a model reads and an error for a
// failed run: stdout, then stderr under a "[stderr]" line when there is any.
// A non-zero exit or a signal is an error whose message holds the last lines
// of stderr and then, under a "[stdout]" line, what the program printed
// before it failed (the text too keeps it), so that a caller that reads only
// the error loses none of it.
func Summary(out Output) (string, error) {
	text := out.Stdout
	if out.Stderr != "" && out.ExitCode == 0 && out.Signal == "" {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "[stderr]\n" + out.Stderr
	}
	if out.Truncated {
		text += "\n[output truncated]"
	}
	printed := ""
	if text != "" {
		printed = "\n[stdout]\n" + text
	}
	switch {
	case out.Signal != "":
		return text, fmt.Errorf("python killed by signal %s: %s%s", out.Signal, lastLines(out.Stderr, 5), printed)
	case out.ExitCode != 0:
		return text, fmt.Errorf("python exited with status %d: %s%s", out.ExitCode, lastLines(out.Stderr, 5), printed)
	}
	return text, nil
}
