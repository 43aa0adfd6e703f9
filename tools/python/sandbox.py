# toolrl python sandbox preamble: run by the python tool as
#   python3 -I -B -c <this> WORKDIR CPU_S MEM_BYTES FSIZE_BYTES NOFILE NET NPROC [--probe]
# It lowers the rlimits (hard and soft), confines writes to WORKDIR with
# Landlock when the kernel has it (and, with NET=0 and Landlock ABI >= 4,
# denies TCP bind/connect), with NET=0 makes socket(2) fail with EACCES
# through a seccomp filter (x86_64 and aarch64), then runs WORKDIR/main.py as
# __main__.
import ctypes, os, platform, resource, sys

# seccomp: (AUDIT_ARCH, __NR_socket) per machine.
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}


def _deny_sockets(libc):
    arch = _SECCOMP_ARCH.get(platform.machine())
    if arch is None:
        return False

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]

    LD, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06
    prog = [
        (LD, 0, 0, 4),                # A = seccomp_data.arch
        (JEQ, 0, 5, arch[0]),         # another ABI: kill
        (LD, 0, 0, 0),                # A = seccomp_data.nr
        (JGE, 2, 0, 0x40000000),      # x32 syscalls: deny
        (JEQ, 1, 0, arch[1]),         # socket: deny
        (RET, 0, 0, 0x7FFF0000),      # allow
        (RET, 0, 0, 0x00050000 | 13), # errno EACCES
        (RET, 0, 0, 0x80000000),      # kill process
    ]
    filters = (SockFilter * len(prog))(*[SockFilter(*i) for i in prog])
    fprog = SockFprog(len(prog), filters)
    # PR_SET_SECCOMP, SECCOMP_MODE_FILTER (no_new_privs is set by the caller)
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
    return True


def _toolrl_sandbox():
    work, cpu, mem, fsize, nofile, net = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6] == "1"
    nproc = int(sys.argv[7])
    probe = "--probe" in sys.argv[8:]
    if cpu > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    for res, v in ((resource.RLIMIT_AS, mem), (resource.RLIMIT_FSIZE, fsize), (resource.RLIMIT_NOFILE, nofile), (resource.RLIMIT_NPROC, nproc)):
        if v > 0:
            resource.setrlimit(res, (v, v))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    landlock = 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
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
        attr = (ctypes.c_uint64 * 2)(fs_all, net_all)
        size = 16 if net_all else 8
        rs = libc.syscall(444, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if rs < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset")

        class PathBeneath(ctypes.Structure):
            _pack_ = 1
            _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

        read = (1 << 0) | (1 << 2) | (1 << 3)  # EXECUTE | READ_FILE | READ_DIR
        dev_rw = (1 << 1) | (1 << 2) | (fs_all & (1 << 14))  # WRITE_FILE | READ_FILE | TRUNCATE
        for path, access in (("/", read), (work, fs_all), ("/dev/null", dev_rw)):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            rule = PathBeneath(access, fd)
            if libc.syscall(445, ctypes.c_int(rs), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                raise OSError(ctypes.get_errno(), "landlock_add_rule " + path)
            os.close(fd)
        if libc.syscall(446, ctypes.c_int(rs), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
        os.close(rs)
        landlock = abi
    seccomp = False if net else _deny_sockets(libc)
    if probe:
        print('{"landlock": %d, "seccomp": %s, "uid": %d}' % (landlock, "true" if seccomp else "false", os.getuid()))
        sys.exit(0)
    os.chdir(work)
    sys.argv = ["main.py"]
    sys.path.insert(0, work)

_toolrl_sandbox()
del _toolrl_sandbox
import runpy
runpy.run_path("main.py", run_name="__main__")
