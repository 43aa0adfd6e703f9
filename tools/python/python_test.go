package python

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/tools/internal/proctest"
)

func newRunner(t *testing.T, opts Options) *Runner {
	t.Helper()
	r, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("isolation: %s", r.Isolation())
	return r
}

func run(t *testing.T, r *Runner, code string) Output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := r.Run(ctx, code, false)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

func TestRun(t *testing.T) {
	r := newRunner(t, Options{})
	out := run(t, r, "import sys\nprint(6 * 7)\nprint('warn', file=sys.stderr)")
	text, err := Summary(out)
	if err != nil || text != "42\n[stderr]\nwarn\n" {
		t.Errorf("Summary = %q, %v", text, err)
	}
	out = run(t, r, "1/0")
	if _, err := Summary(out); err == nil || !strings.Contains(err.Error(), "ZeroDivisionError") || out.ExitCode != 1 {
		t.Errorf("1/0: %+v %v", out, err)
	}
	out = run(t, r, "print('x' * 100000)")
	if !out.Truncated || len(out.Stdout) != 65536 {
		t.Errorf("big output: truncated=%v len=%d", out.Truncated, len(out.Stdout))
	}
	// Its own temp dir: the working directory, writable, removed afterwards.
	out = run(t, r, "import os\nopen('f.txt','w').write('hi')\nprint(os.getcwd())")
	dir := strings.TrimSpace(out.Stdout)
	if !strings.Contains(dir, "toolrl-py-") || out.ExitCode != 0 {
		t.Errorf("cwd %q exit %d: %s", dir, out.ExitCode, out.Stderr)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s still exists: %v", dir, err)
	}
}

// TestSandboxNoNetwork: the code cannot open a socket, nor reach a server
// listening on the host's loopback or any other address; with the
// strongest sandbox this host allows and with no namespaces at all (seccomp
// and Landlock alone).
func TestSandboxNoNetwork(t *testing.T) {
	withAndWithoutNamespaces(t, testNoNetwork)
}

func testNoNetwork(t *testing.T, opts Options) {
	r := newRunner(t, opts)
	if !r.Isolation().NetworkIsolated {
		t.Skipf("this host gives no network isolation: %s", r.Isolation())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	code := fmt.Sprintf(`import socket
for family in [socket.AF_INET, socket.AF_INET6, socket.AF_UNIX]:
    try:
        socket.socket(family)
        print("OPENED", family)
    except OSError as e:
        print("no socket", family, type(e).__name__)
for addr in [("127.0.0.1", %d), ("1.1.1.1", 53)]:
    try:
        s = socket.create_connection(addr, timeout=2)
        print("CONNECTED", addr)
    except OSError as e:
        print("blocked", addr, type(e).__name__)
`, port)
	out := run(t, r, code)
	if r.Isolation().Seccomp && (strings.Contains(out.Stdout, "OPENED") || strings.Count(out.Stdout, "no socket") != 3) {
		t.Errorf("a socket could be opened in the sandbox:\n%s%s", out.Stdout, out.Stderr)
	}
	if strings.Contains(out.Stdout, "CONNECTED") || strings.Count(out.Stdout, "blocked") != 2 {
		t.Errorf("network reachable from the sandbox:\n%s%s", out.Stdout, out.Stderr)
	}
}

// TestSandboxWritesConfined: the code can write in its own dir but not in a
// world-writable dir outside it, nor in /tmp; with and without namespaces.
func TestSandboxWritesConfined(t *testing.T) {
	withAndWithoutNamespaces(t, testWritesConfined)
}

func testWritesConfined(t *testing.T, opts Options) {
	r := newRunner(t, opts)
	if r.Isolation().Landlock == 0 {
		t.Skipf("this host cannot confine writes: %s", r.Isolation())
	}
	// A world-writable dir that nobody can reach (t.TempDir's parents are
	// private), so that only the sandbox can stop the writes.
	outside, err := os.MkdirTemp("", "toolrl-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	if err := os.Chmod(outside, 0o777); err != nil || !reachableByOthers(outside) {
		t.Fatalf("chmod %s: %v", outside, err)
	}
	target := filepath.Join(outside, "escaped.txt")
	tmpTarget := filepath.Join(os.TempDir(), fmt.Sprintf("toolrl-escape-%d.txt", time.Now().UnixNano()))
	code := fmt.Sprintf(`import os
for p in [%q, %q, "inside.txt"]:
    try:
        with open(p, "w") as f:
            f.write("x")
        print("WROTE", p)
    except OSError as e:
        print("denied", p, type(e).__name__)
try:
    os.mkdir(%q)
    print("WROTE dir")
except OSError as e:
    print("denied dir", type(e).__name__)
`, target, tmpTarget, filepath.Join(outside, "d"))
	out := run(t, r, code)
	for _, p := range []string{target, tmpTarget, filepath.Join(outside, "d")} {
		if _, err := os.Stat(p); err == nil {
			os.RemoveAll(p)
			t.Errorf("sandbox wrote %s", p)
		}
	}
	if !strings.Contains(out.Stdout, "WROTE inside.txt") || strings.Count(out.Stdout, "denied") != 3 {
		t.Errorf("unexpected sandbox output:\n%s%s", out.Stdout, out.Stderr)
	}
}

func TestSandboxLimits(t *testing.T) {
	r := newRunner(t, Options{MemoryMB: 128, FileSizeMB: 1, CPUSeconds: 1})
	out := run(t, r, "b = bytearray(512 * 1024 * 1024)")
	if _, err := Summary(out); err == nil || !strings.Contains(err.Error(), "MemoryError") {
		t.Errorf("memory limit: %+v", out)
	}
	out = run(t, r, "open('big', 'wb').write(b'x' * (2 << 20))")
	if _, err := Summary(out); err == nil || !strings.Contains(err.Error(), "File too large") {
		t.Errorf("file size limit: %+v", out)
	}
	out = run(t, r, "while True: pass")
	if out.Signal == "" {
		t.Errorf("cpu limit: %+v", out)
	}
}

// TestTimeoutKillsProcessTree: code that starts a child and hangs is killed
// with its child at the deadline.
func TestTimeoutKillsProcessTree(t *testing.T) {
	r := newRunner(t, Options{CPUSeconds: 30})
	before := proctest.Descendants(os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := r.Run(ctx, "import subprocess, time\nsubprocess.Popen(['sleep', '60'])\nsubprocess.Popen(['sh', '-c', 'sleep 60 & sleep 60'])\ntime.sleep(60)", false)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want deadline exceeded", err)
	}
	if err := proctest.WaitDescendants(os.Getpid(), before, 5*time.Second); err != nil {
		t.Error(err)
	}
}

// TestRunsAsNobody: as root, the code runs as nobody with or without
// namespaces.
func TestRunsAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root")
	}
	for _, opts := range []Options{{}, {skipModes: []string{"root", "user"}}} {
		out := run(t, newRunner(t, opts), "import os\nprint(os.getuid(), os.getgid(), os.getgroups())")
		if strings.TrimSpace(out.Stdout) != "65534 65534 []" {
			t.Errorf("ids = %q %s", out.Stdout, out.Stderr)
		}
	}
}

// TestProcessLimit: as nobody, the code cannot start more processes than
// Processes allows (a fork bomb stops early), and nothing outlives the run;
// with a cgroup per call (pids.max) and without (RLIMIT_NPROC).
func TestProcessLimit(t *testing.T) {
	t.Run("best", func(t *testing.T) { testProcessLimit(t, Options{Processes: 16}) })
	t.Run("no-cgroup", func(t *testing.T) { testProcessLimit(t, Options{Processes: 16, skipModes: []string{"cgroup"}}) })
}

func testProcessLimit(t *testing.T, opts Options) {
	if os.Geteuid() != 0 {
		t.Skip("RLIMIT_NPROC is set only when the code runs as nobody")
	}
	before := proctest.Descendants(os.Getpid())
	r := newRunner(t, opts)
	out := run(t, r, `import subprocess
procs = []
try:
    for i in range(64):
        procs.append(subprocess.Popen(["sleep", "30"]))
    print("STARTED", len(procs))
except OSError as e:
    print("stopped after", len(procs), type(e).__name__)
`)
	if !strings.Contains(out.Stdout, "stopped after") {
		t.Errorf("process limit not enforced: %s%s", out.Stdout, out.Stderr)
	}
	if err := proctest.WaitDescendants(os.Getpid(), before, 5*time.Second); err != nil {
		t.Error(err)
	}
}

// TestTempRootReachable: as root, a temp root nobody cannot reach is
// refused when set, and replaced by /tmp when it only came from TMPDIR.
func TestTempRootReachable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root drops to nobody")
	}
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), Options{TempRoot: private}); err == nil || !strings.Contains(err.Error(), "not reachable by nobody") {
		t.Errorf("New with a private temp_root: %v", err)
	}
	t.Setenv("TMPDIR", private)
	r := newRunner(t, Options{})
	out := run(t, r, "import os\nprint(os.getcwd())")
	if !strings.HasPrefix(out.Stdout, "/tmp/toolrl-py-") {
		t.Errorf("cwd %q %s", out.Stdout, out.Stderr)
	}
}

// skipOrFail skips a test whose protection this host cannot give, and fails
// it under CI (CI=true), where the host is expected to give it.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if testsupport.InCI() {
		t.Fatalf(format+" (CI=true: required)", args...)
	}
	t.Skipf(format, args...)
}

// TestSandboxPrivateProc: the code cannot see a host process's command line
// (a secret in another process's arguments) through /proc, with the
// strongest sandbox and with a user namespace.
func TestSandboxPrivateProc(t *testing.T) {
	t.Run("best", func(t *testing.T) { testPrivateProc(t, Options{}) })
	t.Run("user", func(t *testing.T) { testPrivateProc(t, Options{skipModes: []string{"root"}}) })
}

func testPrivateProc(t *testing.T, opts Options) {
	r := newRunner(t, opts)
	if r.Isolation().Proc == "host" {
		skipOrFail(t, "this host gives no private /proc: %s", r.Isolation())
	}
	secret := fmt.Sprintf("SECRETTOKEN%d", time.Now().UnixNano())
	host := exec.Command("sleep", "60", secret)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { host.Process.Kill(); host.Wait() }()
	code := fmt.Sprintf(`import os
pids = [p for p in os.listdir("/proc") if p.isdigit()] if os.path.isdir("/proc") else []
print("pids", len(pids))
for p in pids + [%q, "1"]:
    for name in ("cmdline", "environ", "status"):
        try:
            print(p, name, open("/proc/%%s/%%s" %% (p, name), "rb").read().replace(b"\0", b" "))
        except OSError as e:
            print(p, name, type(e).__name__)
`, strconv.Itoa(host.Process.Pid))
	out := run(t, r, code)
	if strings.Contains(out.Stdout+out.Stderr, secret) || !strings.HasPrefix(out.Stdout, "pids ") {
		t.Errorf("the sandbox sees the host's processes:\n%s%s", out.Stdout, out.Stderr)
	}
	if strings.Contains(out.Stdout, "sleep") {
		t.Errorf("a host process is listed in the sandbox's /proc:\n%s", out.Stdout)
	}
}

// TestSandboxDeniesUserNamespaces: unshare(CLONE_NEWUSER) and the unshare
// command fail in the sandbox (with and without namespaces), while threads
// and child processes still work.
func TestSandboxDeniesUserNamespaces(t *testing.T) {
	t.Run("best", func(t *testing.T) { testDeniesUserNamespaces(t, Options{}) })
	t.Run("user", func(t *testing.T) { testDeniesUserNamespaces(t, Options{skipModes: []string{"root"}}) })
	t.Run("no-namespaces", func(t *testing.T) { testDeniesUserNamespaces(t, Options{skipModes: []string{"root", "user"}}) })
}

func testDeniesUserNamespaces(t *testing.T, opts Options) {
	r := newRunner(t, opts)
	if !r.Isolation().UserNamespacesDenied {
		skipOrFail(t, "this host cannot deny user namespaces: %s", r.Isolation())
	}
	out := run(t, r, `import ctypes, os, shutil, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
for flags in (0x10000000, 0x10000000 | 0x00020000):  # CLONE_NEWUSER, | CLONE_NEWNS
    if libc.unshare(flags) == 0:
        print("UNSHARED", hex(flags))
    else:
        print("denied", os.strerror(ctypes.get_errno()))
if hasattr(os, "unshare"):
    try:
        os.unshare(os.CLONE_NEWUSER)
        print("UNSHARED os.unshare")
    except OSError as e:
        print("os.unshare denied", e)
if shutil.which("unshare"):
    p = subprocess.run(["unshare", "--user", "--map-root-user", "id", "-u"], capture_output=True, text=True)
    print("UNSHARED command" if p.returncode == 0 else "command denied", p.stdout.strip(), p.stderr.strip())
t = threading.Thread(target=lambda: print("thread ran"))
t.start(); t.join()
print("child", subprocess.run(["echo", "ok"], capture_output=True, text=True).stdout.strip())
`)
	if strings.Contains(out.Stdout, "UNSHARED") || strings.Count(out.Stdout, "denied") < 2 ||
		!strings.Contains(out.Stdout, "thread ran") || !strings.Contains(out.Stdout, "child ok") {
		t.Errorf("user namespaces in the sandbox:\n%s%s", out.Stdout, out.Stderr)
	}
}

// TestSummaryKeepsStdout: a program that fails after printing keeps what it
// printed, in the text and in the error the model reads.
func TestSummaryKeepsStdout(t *testing.T) {
	r := newRunner(t, Options{})
	out := run(t, r, "print('partial result 41')\nraise ValueError('boom')")
	text, err := Summary(out)
	if err == nil || !strings.Contains(err.Error(), "ValueError: boom") || !strings.Contains(err.Error(), "partial result 41") {
		t.Errorf("Summary error = %v", err)
	}
	if !strings.Contains(text, "partial result 41") {
		t.Errorf("Summary text = %q", text)
	}
	// Killed by a signal (a segfault): what it printed before is kept too.
	out = run(t, r, "import ctypes\nprint('before the kill', end='')\nctypes.string_at(0)")
	if _, err := Summary(out); err == nil || !strings.Contains(err.Error(), "killed by signal") || !strings.Contains(err.Error(), "[stdout]\nbefore the kill") {
		t.Errorf("Summary error after a kill = %v (%+v)", err, out)
	}
}

// TestTimeoutRemovesTempDir: a timed-out run whose code took the permissions
// of its folders away leaves no temp dir behind. As root (who removes
// anything) the test also runs itself as nobody, where the permissions
// matter.
func TestTimeoutRemovesTempDir(t *testing.T) {
	root, err := os.MkdirTemp("", "toolrl-temproot-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, Options{CPUSeconds: 30, TempRoot: root})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := r.Run(ctx, `import os, time
os.makedirs("locked/inner")
open("locked/inner/f", "w").write("x")
os.chmod("locked/inner", 0)
os.chmod("locked", 0o500)
print("ready", os.getcwd())
time.sleep(60)
`, false)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(out.Stdout, "ready ") {
		t.Fatalf("Run = %v, %+v", err, out)
	}
	if left, _ := filepath.Glob(filepath.Join(root, "toolrl-py-*")); len(left) > 0 {
		t.Errorf("temp dirs left after a timed-out run: %v", left)
	}
	if os.Geteuid() != 0 || os.Getenv("TOOLRL_TEST_AS_NOBODY") != "" {
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		skipOrFail(t, "setpriv not found: cannot rerun the test as nobody")
	}
	// The test binary, where nobody can run it.
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "python.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run=^TestTimeoutRemovesTempDir$", "-test.v")
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=" + root, "TOOLRL_TEST_AS_NOBODY=1"}
	got, err := cmd.CombinedOutput()
	t.Logf("as nobody:\n%s", got)
	if err != nil || !strings.Contains(string(got), "--- PASS") {
		t.Errorf("as nobody: %v\n%s", err, got)
	}
}

// TestStaleTempDirsRemoved: New removes the temp dirs of a toolrl process
// that no longer runs, and keeps those of live ones.
func TestStaleTempDirsRemoved(t *testing.T) {
	root, err := os.MkdirTemp("", "toolrl-temproot-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, fmt.Sprintf("toolrl-py-%d-123", gone.Process.Pid))
	live := filepath.Join(root, fmt.Sprintf("toolrl-py-%d-456", os.Getppid()))
	for _, d := range []string{filepath.Join(stale, "sub"), live} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	newRunner(t, Options{TempRoot: root})
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temp dir kept: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's temp dir removed: %v", err)
	}
}

// TestSandboxDeniesIOURing: io_uring, whose IORING_OP_SOCKET opens a socket
// that the seccomp filter on socket(2) never sees, cannot be set up (#30),
// nor can ptrace, process_vm_readv and pidfd_getfd (another process's memory
// and fds), with and without namespaces.
func TestSandboxDeniesIOURing(t *testing.T) {
	withAndWithoutNamespaces(t, testDeniesIOURing)
}

func testDeniesIOURing(t *testing.T, opts Options) {
	r := newRunner(t, opts)
	if !r.Isolation().Seccomp {
		skipOrFail(t, "no seccomp on this host: %s", r.Isolation())
	}
	out := run(t, r, `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
params = (ctypes.c_char * 120)()
for nr, name in ((425, "io_uring_setup"), (426, "io_uring_enter"), (427, "io_uring_register")):
    args = (4, params) if nr == 425 else (0, 0, 0, 0, 0, 0)
    ret = libc.syscall(nr, *args)
    print(name, "OPENED" if ret >= 0 else "denied", ret, os.strerror(ctypes.get_errno()))
# Nor ptrace, process_vm_readv or pidfd_getfd, which take another process's
# memory or fds (tried here on the program itself).
print("ptrace", "OPENED" if libc.ptrace(0, 0, 0, 0) == 0 else "denied")  # PTRACE_TRACEME
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
src, dst = ctypes.create_string_buffer(b"x" * 8), ctypes.create_string_buffer(8)
local, remote = iovec(ctypes.addressof(dst), 8), iovec(ctypes.addressof(src), 8)
n = libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print("process_vm_readv", "OPENED" if n == 8 else "denied")
pfd = os.pidfd_open(os.getpid())
print("pidfd_getfd", "OPENED" if libc.syscall(438, pfd, 1, 0) >= 0 else "denied")
`)
	if strings.Contains(out.Stdout, "OPENED") || strings.Count(out.Stdout, "denied") != 6 ||
		strings.Contains(out.Stdout, "Bad file descriptor") {
		t.Errorf("io_uring in the sandbox:\n%s%s", out.Stdout, out.Stderr)
	}
}

// TestSandboxClosesInheritedFiles: a file the caller holds open without
// close-on-exec (a secret, a log) is neither readable nor writable in the
// sandbox, by its number or through /proc/self/fd (#30).
func TestSandboxClosesInheritedFiles(t *testing.T) {
	withAndWithoutNamespaces(t, testClosesInheritedFiles)
}

func testClosesInheritedFiles(t *testing.T, opts Options) {
	r := newRunner(t, opts)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("INHERITEDSECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(secret, syscall.O_RDWR, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	out := run(t, r, fmt.Sprintf(`import os
fd = %d
try:
    print("READ", os.pread(fd, 100, 0))
except OSError as e:
    print("no read", type(e).__name__)
try:
    os.write(fd, b"WRITTEN")
    print("WROTE")
except OSError as e:
    print("no write", type(e).__name__)
try:
    print("READ proc", open("/proc/self/fd/%%d" %% fd, "rb").read())
except OSError as e:
    print("no proc", type(e).__name__)
print("open fds", sorted(int(f) for f in os.listdir("/proc/self/fd")))
`, fd))
	got, _ := os.ReadFile(secret)
	if strings.Contains(out.Stdout, "INHERITEDSECRET") || strings.Contains(out.Stdout, "WROTE") ||
		string(got) != "INHERITEDSECRET" || !strings.Contains(out.Stdout, "no read") {
		t.Errorf("an inherited file is usable in the sandbox (file now %q):\n%s%s", got, out.Stdout, out.Stderr)
	}
}

// TestHelperLongCall is not a test: TestSandboxDiesWithParent runs the test
// binary as a toolrl stand-in that makes one long call and is then killed.
func TestHelperLongCall(t *testing.T) {
	root := os.Getenv("TOOLRL_TEST_LONG_CALL_ROOT")
	if root == "" {
		t.Skip("a helper process of TestSandboxDiesWithParent")
	}
	var opts Options
	if skip := os.Getenv("TOOLRL_TEST_LONG_CALL_SKIP"); skip != "" {
		opts.skipModes = strings.Split(skip, ",")
	}
	opts.TempRoot, opts.CPUSeconds = root, 60
	r := newRunner(t, opts)
	run(t, r, `import subprocess, time
subprocess.Popen(["sleep", "120"])
open("ready", "w").close()
time.sleep(120)
`)
}

// TestSandboxDiesWithParent: when the toolrl process is killed (SIGKILL or
// SIGTERM) during a call, the sandboxed python and what it started die with
// it, and its temp dir does not stay (#30).
func TestSandboxDiesWithParent(t *testing.T) {
	for _, c := range []struct {
		name, skip string
		sig        syscall.Signal
	}{{"SIGKILL", "", syscall.SIGKILL}, {"SIGTERM", "", syscall.SIGTERM},
		{"SIGKILL/user", "root", syscall.SIGKILL}, {"SIGKILL/no-namespaces", "root,user", syscall.SIGKILL}} {
		t.Run(c.name, func(t *testing.T) { testDiesWithParent(t, c.sig, c.skip) })
	}
}

func testDiesWithParent(t *testing.T, sig syscall.Signal, skip string) {
	nons := skip == "root,user"
	root, err := os.MkdirTemp("", "toolrl-temproot-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperLongCall$", "-test.v")
	helper.Env = append(os.Environ(), "TOOLRL_TEST_LONG_CALL_ROOT="+root)
	helper.Env = append(helper.Env, "TOOLRL_TEST_LONG_CALL_SKIP="+skip)
	var log strings.Builder
	helper.Stdout, helper.Stderr = &log, &log
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	// The call is running once its code wrote "ready" (host side: the temp
	// dir itself, or the sandbox's private copy seen through /proc).
	var procs []int
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		procs = proctest.Descendants(helper.Process.Pid)
		ready, _ := filepath.Glob(filepath.Join(root, "toolrl-py-*", "ready"))
		for _, p := range procs {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/cwd/ready", p)); err == nil {
				ready = append(ready, "yes")
			}
		}
		if len(ready) > 0 && len(procs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			helper.Process.Kill()
			helper.Wait()
			t.Fatalf("the helper's call never got ready:\n%s", log.String())
		}
	}
	all := procs
	if nons {
		// Without a PID namespace only python itself has the parent-death
		// signal; what it started outlives it until the next runner's sweep
		// of stale cgroups (see Isolation.Notes).
		defer func() {
			for _, p := range all {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}()
		procs = procs[:1]
	}
	if err := helper.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	// Every process of the call must go (zombies left for init count as
	// gone); a bounded wait, since the kernel delivers the signals.
	alive := func() []int {
		var left []int
		for _, p := range procs {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			if err != nil {
				continue
			}
			s := string(stat)
			if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] != "Z" && f[0] != "X" {
				left = append(left, p)
			}
		}
		return left
	}
	for deadline := time.Now().Add(5 * time.Second); len(alive()) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if nons {
		if r := newRunner(t, Options{TempRoot: root}); r.Isolation().Cgroup != "" {
			procs = all // the sweep killed the stale call cgroup's processes
		}
	}
	if left := alive(); len(left) > 0 {
		for _, p := range left {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			t.Errorf("process %d outlived the killed toolrl process: %q", p, strings.ReplaceAll(string(cmdline), "\x00", " ")[:min(80, len(cmdline))])
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	// Its temp dir: gone with the sandbox's mount namespace, or (without
	// namespaces) removed by the next runner's sweep.
	if left, _ := filepath.Glob(filepath.Join(root, "toolrl-py-*")); len(left) > 0 {
		if !nons {
			t.Errorf("temp dirs left by the killed call: %v", left)
		}
		newRunner(t, Options{TempRoot: root})
		if left, _ := filepath.Glob(filepath.Join(root, "toolrl-py-*")); len(left) > 0 {
			t.Errorf("temp dirs left after the next runner's sweep: %v", left)
		}
	}
}

// TestSandboxCallsDoNotSeeEachOther: a call cannot list the temp root nor
// read another running call's program or files (#30); with and without
// namespaces.
func TestSandboxCallsDoNotSeeEachOther(t *testing.T) {
	withAndWithoutNamespaces(t, testCallsDoNotSeeEachOther)
}

func testCallsDoNotSeeEachOther(t *testing.T, opts Options) {
	root, err := os.MkdirTemp("", "toolrl-temproot-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	opts.TempRoot, opts.CPUSeconds = root, 60
	r := newRunner(t, opts)
	if r.Isolation().Namespaces == "" && r.Isolation().Landlock == 0 {
		skipOrFail(t, "neither namespaces nor Landlock on this host: %s", r.Isolation())
	}
	secret := fmt.Sprintf("CALLSECRET%d", time.Now().UnixNano())
	before := proctest.Descendants(os.Getpid())
	first := make(chan Output, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, _ := r.Run(ctx, fmt.Sprintf(`import os, time
# %s
open("data.txt", "w").write(%q)
open("ready", "w").close()
for _ in range(3000):
    if os.path.exists("done"):
        break
    time.sleep(0.01)
`, secret, secret), false)
		first <- out
	}()
	// The first call's dir, from its process, once it is ready.
	var dir string
	for deadline := time.Now().Add(20 * time.Second); dir == ""; time.Sleep(10 * time.Millisecond) {
		for _, p := range proctest.Descendants(os.Getpid()) {
			if slices.Contains(before, p) {
				continue
			}
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/cwd/ready", p)); err == nil {
				dir = fmt.Sprintf("/proc/%d/cwd", p)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the first call never got ready")
		}
	}
	path, err := os.Readlink(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, r, fmt.Sprintf(`import os
root = os.path.dirname(os.getcwd())
try:
    names = [n for n in os.listdir(root) if n != os.path.basename(os.getcwd())]
    print("listed", names)
except OSError as e:
    names = []
    print("no list", type(e).__name__)
for p in [os.path.join(root, n, f) for n in names for f in ("main.py", "data.txt")] + [%q, %q]:
    try:
        print("READ", p, open(p).read())
    except OSError as e:
        print("denied", p, type(e).__name__)
# Nor through the first call's process: its fds, its memory.
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
pid = %s
try:
    pfd = os.pidfd_open(pid)
    fd = libc.syscall(438, pfd, 1, 0)  # pidfd_getfd: its stdout
    print("GOT fd" if fd >= 0 else "no getfd", os.strerror(ctypes.get_errno()))
except OSError as e:
    print("no pidfd", type(e).__name__)
if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
    print("ATTACHED")
    libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
else:
    print("no ptrace", os.strerror(ctypes.get_errno()))
try:
    os.kill(pid, 18)  # SIGCONT: harmless, but a SIGKILL would go the same way
    print("SIGNALED")
except OSError as e:
    print("no signal", type(e).__name__)
`, filepath.Join(path, "main.py"), filepath.Join(path, "data.txt"), strings.Split(dir, "/")[2]))
	os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	<-first
	t.Logf("the second call:\n%s", out.Stdout)
	if strings.Contains(out.Stdout, secret) || strings.Contains(out.Stdout, "READ") || strings.Count(out.Stdout, "denied") < 2 ||
		strings.Contains(out.Stdout, "GOT fd") || strings.Contains(out.Stdout, "ATTACHED") || !strings.Contains(out.Stdout, "no ptrace") ||
		strings.Contains(out.Stdout, "SIGNALED") {
		t.Errorf("a call sees another call's files or process:\n%s%s", out.Stdout, out.Stderr)
	}
}

// TestSandboxHostFilesUnreadable: the code cannot read project files (the
// tools registry, prompts, this package's source) nor list their folder,
// while the interpreter, its standard library and system commands work
// (#30); with and without namespaces.
func TestSandboxHostFilesUnreadable(t *testing.T) {
	withAndWithoutNamespaces(t, testHostFilesUnreadable)
}

func testHostFilesUnreadable(t *testing.T, opts Options) {
	r := newRunner(t, opts)
	if r.Isolation().Landlock == 0 {
		skipOrFail(t, "no Landlock on this host: %s", r.Isolation())
	}
	src, err := filepath.Abs("python.go")
	if err != nil {
		t.Fatal(err)
	}
	if !reachableByOthers(filepath.Dir(src)) {
		t.Skipf("%s is not readable by others anyway", src)
	}
	out := run(t, r, fmt.Sprintf(`import json, os, subprocess, sys
for p in [%q, %q, "/work", "/home", "/root", "/srv", "/opt", "/var"]:
    try:
        data = open(p).read() if os.path.isfile(p) else os.listdir(p)
        print("READ", p, str(data)[:40])
    except OSError as e:
        print("denied", p, type(e).__name__)
print("stdlib", json.dumps([1]))
print("child", subprocess.run(["sh", "-c", "echo ok"], capture_output=True, text=True).stdout.strip())
`, src, filepath.Dir(src)))
	if strings.Contains(out.Stdout, "READ "+src) || strings.Contains(out.Stdout, "READ "+filepath.Dir(src)) ||
		!strings.Contains(out.Stdout, "stdlib [1]") || !strings.Contains(out.Stdout, "child ok") {
		t.Errorf("host files readable in the sandbox, or the interpreter broken:\n%s%s", out.Stdout, out.Stderr)
	}
	if strings.Contains(out.Stdout, "READ") {
		t.Errorf("a folder outside the system ones is readable:\n%s", out.Stdout)
	}
}

// TestMemoryLimitPerCall: with memory_mb 64, a program whose four children
// each touch 24 MiB cannot hold them all at once (96 MiB): the limit holds
// for the call as a whole, not per process (#30).
func TestMemoryLimitPerCall(t *testing.T) {
	r := newRunner(t, Options{MemoryMB: 64})
	if r.Isolation().Cgroup == "" {
		skipOrFail(t, "no cgroup per call on this host: %s", r.Isolation())
	}
	out := run(t, r, `import os, select
mib = 24
up_r, up_w = os.pipe()
go_r, go_w = os.pipe()
kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        try:
            block = b"x" * (mib << 20)  # touched, not only reserved
            os.write(up_w, bytes([i]))
            os.read(go_r, 1)
        finally:
            os._exit(0)
    kids.append(pid)
# Until every child holds its block (blocked, alive) or was killed.
holding, dead = set(), set()
while len(holding - dead) + len(dead) < 4:
    if select.select([up_r], [], [], 0.05)[0]:
        holding.update(kids[i] for i in os.read(up_r, 4))
    for pid in kids:
        if pid not in dead and os.waitpid(pid, os.WNOHANG)[0]:
            dead.add(pid)
held, killed = len(holding - dead), len(dead)
print("held", held, "MiB", held * mib, "killed", killed)
os.write(go_w, b"gggg")
for pid in set(kids) - dead:
    os.waitpid(pid, 0)
`)
	var held, mib, killed int
	if _, err := fmt.Sscanf(out.Stdout, "held %d MiB %d killed %d", &held, &mib, &killed); err != nil {
		t.Fatalf("output %q %s: %v", out.Stdout, out.Stderr, err)
	}
	t.Logf("children holding 24 MiB at once: %d (%d MiB), killed %d", held, mib, killed)
	if mib > 64 {
		t.Errorf("the call held %d MiB in its children under memory_mb 64", mib)
	}
}

// TestProcessLimitPerCall: a call that forks up to its process limit does
// not make a concurrent call fail to start a process (#30): the limit is
// per call, not per uid.
func TestProcessLimitPerCall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the process limit is set only when the code runs as nobody")
	}
	r := newRunner(t, Options{Processes: 16, CPUSeconds: 60})
	if r.Isolation().Cgroup == "" {
		skipOrFail(t, "no cgroup per call on this host: %s", r.Isolation())
	}
	before := proctest.Descendants(os.Getpid())
	first := make(chan Output, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, _ := r.Run(ctx, `import os, subprocess, time
procs = []
try:
    for i in range(64):
        procs.append(subprocess.Popen(["sleep", "60"]))
except OSError as e:
    print("stopped after", len(procs), type(e).__name__)
open("ready", "w").close()
for _ in range(3000):
    if os.path.exists("done"):
        break
    time.sleep(0.01)
for p in procs:
    p.kill()
`, false)
		first <- out
	}()
	var dir string
	for deadline := time.Now().Add(20 * time.Second); dir == ""; time.Sleep(10 * time.Millisecond) {
		for _, p := range proctest.Descendants(os.Getpid()) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/cwd/ready", p)); err == nil && !slices.Contains(before, p) {
				dir = fmt.Sprintf("/proc/%d/cwd", p)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the first call never got ready")
		}
	}
	out := run(t, r, `import subprocess
print("child", [subprocess.run(["echo", "ok"], capture_output=True, text=True).stdout.strip() for _ in range(3)])
`)
	os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	got := <-first
	if !strings.Contains(got.Stdout, "stopped after") {
		t.Errorf("the first call was not limited: %s%s", got.Stdout, got.Stderr)
	}
	if !strings.Contains(out.Stdout, "child ['ok', 'ok', 'ok']") {
		t.Errorf("a call failed to start a process while another was at its limit: %s%s", out.Stdout, out.Stderr)
	}
}

// withAndWithoutNamespaces runs a sandbox test with the best isolation the
// host gives ("best") and again without namespaces ("no-namespaces"), where
// Landlock and seccomp must hold alone.
func withAndWithoutNamespaces(t *testing.T, test func(*testing.T, Options)) {
	t.Run("best", func(t *testing.T) { test(t, Options{}) })
	t.Run("no-namespaces", func(t *testing.T) { test(t, Options{skipModes: []string{"root", "user"}}) })
}

// A temp_root at the file system's root, or relative, is refused before
// anything is made or removed under it.
func TestTempRootRefusesRootAndRelative(t *testing.T) {
	for _, root := range []string{"/", "//", "tmp/py", "./x"} {
		if _, err := New(context.Background(), Options{TempRoot: root}); err == nil || !strings.Contains(err.Error(), "want an absolute folder other than /") {
			t.Errorf("temp_root %q: %v", root, err)
		}
	}
}
