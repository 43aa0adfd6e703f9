# toolrl python sandbox preamble: run by the python tool as
#   python3 -I -B -c <this> WORKDIR CPU_S MEM_BYTES FSIZE_BYTES NOFILE NET NPROC PRIV CGROUP [--probe]
# With CGROUP "NAME:COUNT" it first waits until the runner has moved it into
# the call's cgroup(s) (COUNT hierarchies list NAME in /proc/self/cgroup).
# With PRIV "root" (real root in new mount and PID namespaces) or "user"
# (root of a new user namespace with new mount and PID namespaces) it first
# mounts a private /proc that shows only the sandbox's processes (or, where
# the kernel refuses that, an empty read-only tmpfs over /proc), then gives
# the privilege up: "root" becomes nobody (65534), "user" drops every
# capability for good. It then lowers the rlimits (hard and soft), confines
# writes to WORKDIR and reads to the system folders (_readable) with
# Landlock when the kernel has it (and, with NET=0 and
# Landlock ABI >= 4, denies TCP bind/connect; with ABI >= 6, signals and
# abstract unix sockets outside the sandbox), installs a seccomp filter
# (x86_64 and aarch64) that makes unshare(2) and clone(2) with
# CLONE_NEWUSER fail with EPERM (clone3 with ENOSYS, so that libc falls back
# to clone), io_uring_setup/enter/register, ptrace, process_vm_readv/writev
# and pidfd_getfd fail with EPERM and, with NET=0,
# socket(2) fail with EACCES, then runs
# WORKDIR/main.py as __main__.
import ctypes, os, platform, resource, sys

# seccomp: (AUDIT_ARCH, __NR_socket, __NR_unshare, __NR_clone, __NR_clone3) per machine.
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 41, 272, 56, 435), "aarch64": (0xC00000B7, 198, 97, 220, 435)}
# io_uring_setup, io_uring_enter, io_uring_register: the same numbers on both
# machines. A ring's operations (IORING_OP_SOCKET, OPENAT, CONNECT, ...) run
# in the kernel without passing through seccomp, so the filter denies rings.
_NR_IO_URING = (425, 426, 427)
# ptrace, process_vm_readv, process_vm_writev, pidfd_getfd per machine: another
# process's memory and fds (a socket a host daemon holds). Landlock refuses
# them already for a target outside the sandbox's domain; seccomp refuses
# them where Landlock is missing.
_NR_PEEK = {"x86_64": (101, 310, 311, 438), "aarch64": (117, 270, 271, 438)}
_CLONE_NEWUSER = 0x10000000
_NOBODY = 65534


def _seccomp(libc, deny_sockets):
    """Installs the filter; returns (sockets denied, user namespaces denied)."""
    arch = _SECCOMP_ARCH.get(platform.machine())
    if arch is None:
        return False, False
    audit_arch, nr_socket, nr_unshare, nr_clone, nr_clone3 = arch

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]

    LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    ALLOW, KILL = 0x7FFF0000, 0x80000000
    EACCES, EPERM, ENOSYS = 0x00050000 | 13, 0x00050000 | 1, 0x00050000 | 38
    # Jumps name their targets; they are resolved to offsets below.
    prog = [
        (LD, None, None, 4),                   # A = seccomp_data.arch
        (JEQ, None, "kill", audit_arch),       # another ABI: kill
        (LD, None, None, 0),                   # A = seccomp_data.nr
        (JGE, "eacces", None, 0x40000000),     # x32 syscalls: deny
        (JEQ, "eacces" if deny_sockets else None, None, nr_socket),
        (JEQ, "flags", None, nr_unshare),
        (JEQ, "flags", None, nr_clone),
        (JEQ, "enosys", None, nr_clone3),      # flags behind a pointer
        (JEQ, "eperm", None, _NR_IO_URING[0]),
        (JEQ, "eperm", None, _NR_IO_URING[1]),
        (JEQ, "eperm", None, _NR_IO_URING[2]),
        *[(JEQ, "eperm", None, nr) for nr in _NR_PEEK[platform.machine()]],
        (RET, None, None, ALLOW),
        ("flags", LD, None, None, 16),         # A = low half of args[0]
        (JSET, "eperm", None, _CLONE_NEWUSER),
        (RET, None, None, ALLOW),
        ("eperm", RET, None, None, EPERM),
        ("eacces", RET, None, None, EACCES),
        ("enosys", RET, None, None, ENOSYS),
        ("kill", RET, None, None, KILL),
    ]
    labels, code = {}, []
    for ins in prog:
        if isinstance(ins[0], str):
            labels[ins[0]] = len(code)
            ins = ins[1:]
        code.append(ins)
    filt = []
    for i, (op, jt, jf, k) in enumerate(code):
        off = lambda label: 0 if label is None else labels[label] - i - 1
        filt.append(SockFilter(op, off(jt), off(jf), k))
    filters = (SockFilter * len(filt))(*filt)
    fprog = SockFprog(len(filt), filters)
    # PR_SET_SECCOMP, SECCOMP_MODE_FILTER (no_new_privs is set by the caller)
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
    return deny_sockets, True


def _private_proc(libc):
    """Mounts a /proc of the sandbox's PID namespace, or hides the host's;
    returns "private" or "hidden"."""
    MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_RDONLY, MS_REC, MS_PRIVATE = 2, 4, 8, 1, 1 << 14, 1 << 18
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    # Nothing mounted here may reach the host's mount namespace.
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
    if libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) == 0:
        return "private"
    # A user namespace may not mount proc where the host's /proc is partly
    # masked (containers): cover it instead.
    if libc.mount(b"tmpfs", b"/proc", b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, b"size=4k,mode=555") != 0:
        raise OSError(ctypes.get_errno(), "mount /proc")
    return "hidden"


def _private_workdir(libc, work, size, owner):
    """Moves WORKDIR into a tmpfs of the sandbox's own mount namespace,
    mounted over the temp root: the host's copy is removed, so the call's
    files die with the namespace (nothing stays if toolrl is killed), and
    neither this call nor another sees another call's files."""
    MS_NOSUID, MS_NODEV = 2, 4
    main = os.path.join(work, "main.py")
    with open(main, "rb") as f:
        code = f.read()
    os.unlink(main)
    os.rmdir(work)
    root = os.path.dirname(work)
    opts = b"size=%d,mode=755" % size
    if libc.mount(b"tmpfs", root.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts) != 0:
        raise OSError(ctypes.get_errno(), "mount tmpfs " + root)
    os.mkdir(work, 0o700)
    with open(main, "wb") as f:
        f.write(code)
    if owner is not None:
        os.chown(main, owner, owner)
        os.chown(work, owner, owner)


def _drop_capabilities(libc):
    """Gives up every capability of the user namespace's root for good: no
    capability comes back through setuid fix-ups or execve."""
    for cap in range(64):
        if libc.prctl(24, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # PR_CAPBSET_DROP; EINVAL: no such cap
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
    # SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP and their locks
    if libc.prctl(28, 0x0F, 0, 0, 0) != 0:  # PR_SET_SECUREBITS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECUREBITS)")
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL

    class CapHeader(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class CapData(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    data = (CapData * 2)()
    if libc.capset(ctypes.byref(CapHeader(0x20080522, 0)), data) != 0:  # _LINUX_CAPABILITY_VERSION_3
        raise OSError(ctypes.get_errno(), "capset")


# The system folders the code may read (and execute from); everything else
# (project, data, config and home folders, the temp root) is unreadable
# under Landlock. _readable adds the interpreter's own prefixes and path.
_SYSTEM_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
                "/sys/devices/system/cpu", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full")


def _readable(proc):
    paths = list(_SYSTEM_READ)
    # The host's /proc shows every process: only the code's own entry then.
    paths.append("/proc/self" if proc == "host" else "/proc")
    paths += [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
              os.path.dirname(os.path.realpath(sys.executable))]
    paths += [p for p in sys.path if os.path.isabs(p)]
    # "/" would give everything back.
    return [p for p in dict.fromkeys(paths) if os.path.isabs(p) and os.path.normpath(p) != "/"]


def _await_cgroup(spec):
    """Returns once COUNT lines of /proc/self/cgroup end in /NAME."""
    import select
    name, count = spec.rsplit(":", 1)
    for _ in range(20000):
        with open("/proc/self/cgroup") as f:
            n = sum(1 for line in f if line.rstrip("\n").split(":", 2)[-1].endswith("/" + name))
        if n >= int(count):
            return
        select.select([], [], [], 0.0005)
    raise SystemExit("toolrl sandbox: not moved into the call's cgroup " + name)


def _toolrl_sandbox():
    # Only stdin, stdout and stderr reach the code: a file the caller held
    # open without close-on-exec would be usable whatever Landlock says.
    # (close_range(2) where the kernel has it; fds are below the hard limit.)
    os.closerange(3, max(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1 << 16))
    work, cpu, mem, fsize, nofile, net = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6] == "1"
    nproc, priv, cgroup = int(sys.argv[7]), sys.argv[8], sys.argv[9]
    probe = "--probe" in sys.argv[10:]
    if cgroup != "-":
        _await_cgroup(cgroup)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    proc = "host"
    if priv in ("root", "user"):
        proc = _private_proc(libc)
        _private_workdir(libc, work, max(mem, fsize, 1 << 20), _NOBODY if priv == "root" else None)
        if priv == "root":
            os.setgroups([])
            os.setgid(_NOBODY)
            os.setuid(_NOBODY)
        else:
            _drop_capabilities(libc)
        # The uid change cleared the parent-death signal the runner set: arm
        # it again, so that the sandbox (PID 1 of its namespace, whose death
        # kills every process in it) dies with toolrl.
        if libc.prctl(1, 9, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG, SIGKILL
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if cpu > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    for res, v in ((resource.RLIMIT_AS, mem), (resource.RLIMIT_FSIZE, fsize), (resource.RLIMIT_NOFILE, nofile), (resource.RLIMIT_NPROC, nproc)):
        if v > 0:
            resource.setrlimit(res, (v, v))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    landlock = 0
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # landlock_create_ruleset(VERSION)
    if abi >= 1:
        fs_all = (1 << 13) - 1
        if abi >= 2:
            fs_all |= 1 << 13  # REFER
        if abi >= 3:
            fs_all |= 1 << 14  # TRUNCATE
        if abi >= 5:
            fs_all |= 1 << 15  # IOCTL_DEV
        net_all = 0 if net or abi < 4 else 3  # BIND_TCP | CONNECT_TCP
        # ABI 6: no signal to a process outside the sandbox's domain (another
        # call's, or the host's of the same uid), no abstract unix socket
        # outside it.
        scoped = 0 if abi < 6 else 3  # SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        attr = (ctypes.c_uint64 * 3)(fs_all, net_all, scoped)
        size = 24 if scoped else 16 if net_all else 8
        rs = libc.syscall(444, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if rs < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset")

        class PathBeneath(ctypes.Structure):
            _pack_ = 1
            _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

        read = (1 << 0) | (1 << 2) | (1 << 3)  # EXECUTE | READ_FILE | READ_DIR
        dev_rw = (1 << 1) | (1 << 2) | (fs_all & (1 << 14))  # WRITE_FILE | READ_FILE | TRUNCATE
        rules = [(p, read) for p in _readable(proc)] + [(work, fs_all), ("/dev/null", dev_rw)]
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            if not os.path.isdir(path):
                # A file takes file rights only: EXECUTE, WRITE_FILE,
                # READ_FILE, TRUNCATE, IOCTL_DEV.
                access &= fs_all & ((1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15))
            rule = PathBeneath(access, fd)
            if libc.syscall(445, ctypes.c_int(rs), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                raise OSError(ctypes.get_errno(), "landlock_add_rule " + path)
            os.close(fd)
        if libc.syscall(446, ctypes.c_int(rs), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
        os.close(rs)
        landlock = abi
    seccomp, userns = _seccomp(libc, not net)
    if probe:
        print('{"landlock": %d, "seccomp": %s, "userns_denied": %s, "proc": "%s", "uid": %d}' % (
            landlock, "true" if seccomp else "false", "true" if userns else "false", proc, os.getuid()))
        sys.exit(0)
    os.chdir(work)
    sys.argv = ["main.py"]
    sys.path.insert(0, work)

_toolrl_sandbox()
del _toolrl_sandbox
import runpy
runpy.run_path("main.py", run_name="__main__")
