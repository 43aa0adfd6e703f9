# toolrl python sandbox preamble: run by the python tool as
#   python3 -I -B -c <this> WORKDIR CPU_S MEM_BYTES FSIZE_BYTES NOFILE NET [--probe]
# It lowers the rlimits (hard and soft), confines writes to WORKDIR with
# Landlock when the kernel has it (and, with NET=0 and Landlock ABI >= 4,
# denies TCP bind/connect), then runs WORKDIR/main.py as __main__.
import ctypes, os, resource, sys

def _toolrl_sandbox():
    work, cpu, mem, fsize, nofile, net = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6] == "1"
    probe = "--probe" in sys.argv[7:]
    if cpu > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    for res, v in ((resource.RLIMIT_AS, mem), (resource.RLIMIT_FSIZE, fsize), (resource.RLIMIT_NOFILE, nofile)):
        if v > 0:
            resource.setrlimit(res, (v, v))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    landlock = 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
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
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(446, ctypes.c_int(rs), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
        os.close(rs)
        landlock = abi
    if probe:
        print('{"landlock": %d, "uid": %d}' % (landlock, os.getuid()))
        sys.exit(0)
    os.chdir(work)
    sys.argv = ["main.py"]
    sys.path.insert(0, work)

_toolrl_sandbox()
del _toolrl_sandbox
import runpy
runpy.run_path("main.py", run_name="__main__")
