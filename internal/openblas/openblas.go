// Package openblas loads an OpenBLAS shared library at run time (dlopen) and
// calls its row-major cblas_sgemm. It is how the trainer's GEMM reaches a
// well-kept BLAS without making one a build or run dependency: a binary built
// with it runs where no OpenBLAS is installed, and model/train then keeps its
// pure-Go kernel.
//
// The library is searched, in order, at $TOOLRL_OPENBLAS (a file path; or
// "off", which disables it), then Debian's libopenblas0-openmp and
// libopenblas0-pthread paths, which `make setup` installs.
//
// OpenBLAS's own CPU detection (DYNAMIC_ARCH builds) falls back to its
// slowest kernels on CPUs newer than the release: Debian's 0.3.21 picks
// "Prescott" (SSE3) on a Sapphire Rapids Xeon under a hypervisor, a quarter
// of the AVX-512 rate. Unless OPENBLAS_CORETYPE is set, Load sets it from the
// features Go detects (CoreType) before the library is opened.
package openblas

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef void (*toolrl_sgemm_fn)(int, int, int, int, int, int, float,
	const float *, int, const float *, int, float, float *, int);
typedef void (*toolrl_set_threads_fn)(int);
typedef int (*toolrl_get_int_fn)(void);
typedef char *(*toolrl_get_str_fn)(void);

typedef struct {
	void *handle;
	toolrl_sgemm_fn sgemm;
	toolrl_set_threads_fn set_threads;
	toolrl_get_int_fn get_threads;
	toolrl_get_int_fn get_parallel;
	toolrl_get_str_fn get_config;
	toolrl_get_str_fn get_corename;
} toolrl_openblas;

static const char *toolrl_openblas_open(const char *path, toolrl_openblas *lib) {
	lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib->handle == NULL) {
		return dlerror();
	}
	lib->sgemm = (toolrl_sgemm_fn)dlsym(lib->handle, "cblas_sgemm");
	lib->set_threads = (toolrl_set_threads_fn)dlsym(lib->handle, "openblas_set_num_threads");
	lib->get_threads = (toolrl_get_int_fn)dlsym(lib->handle, "openblas_get_num_threads");
	lib->get_parallel = (toolrl_get_int_fn)dlsym(lib->handle, "openblas_get_parallel");
	lib->get_config = (toolrl_get_str_fn)dlsym(lib->handle, "openblas_get_config");
	lib->get_corename = (toolrl_get_str_fn)dlsym(lib->handle, "openblas_get_corename");
	if (lib->sgemm == NULL || lib->set_threads == NULL || lib->get_threads == NULL ||
		lib->get_parallel == NULL || lib->get_config == NULL || lib->get_corename == NULL) {
		dlclose(lib->handle);
		lib->handle = NULL;
		return "not an OpenBLAS library (no cblas_sgemm/openblas_* symbols)";
	}
	return NULL;
}

static void toolrl_openblas_sgemm(toolrl_openblas *lib, int ta, int tb, int m, int n, int k,
	float alpha, const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc) {
	// 101 CblasRowMajor; 111 CblasNoTrans, 112 CblasTrans.
	lib->sgemm(101, ta ? 112 : 111, tb ? 112 : 111, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void toolrl_openblas_set_threads(toolrl_openblas *lib, int n) { lib->set_threads(n); }
static int toolrl_openblas_threads(toolrl_openblas *lib) { return lib->get_threads(); }
static int toolrl_openblas_parallel(toolrl_openblas *lib) { return lib->get_parallel(); }
static const char *toolrl_openblas_config(toolrl_openblas *lib) { return lib->get_config(); }
static const char *toolrl_openblas_corename(toolrl_openblas *lib) { return lib->get_corename(); }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// EnvLibrary names the library file explicitly; the value "off" disables
// OpenBLAS (model/train then uses its pure-Go GEMM).
const EnvLibrary = "TOOLRL_OPENBLAS"

// Off is the EnvLibrary value that disables OpenBLAS.
const Off = "off"

// candidates are Debian's OpenBLAS builds (libopenblas0-openmp,
// libopenblas0-pthread), in the order they are tried.
var candidates = []string{
	"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
	"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
	"/usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0",
	"/usr/lib/aarch64-linux-gnu/openblas-pthread/libopenblas.so.0",
}

// ErrNotFound is returned (wrapped) when no library is installed.
var ErrNotFound = errors.New("no OpenBLAS library found (`make setup` installs Debian's libopenblas0-openmp; or set " + EnvLibrary + ")")

// ErrDisabled is returned when EnvLibrary is "off".
var ErrDisabled = errors.New(EnvLibrary + "=off")

// Library is a loaded OpenBLAS.
type Library struct {
	path string
	lib  C.toolrl_openblas
	// mu serialises Sgemm: OpenBLAS's thread pool serves one caller at a time.
	mu sync.Mutex
}

// The dlopen handle is process-wide, so the loaded library is too: it is
// loaded once, guarded by a sync.Once, like internal/ort's environment.
var (
	loadOnce sync.Once
	loaded   *Library
	loadErr  error
)

// Load returns the process's OpenBLAS, loading it on first use with
// threads threads, fixed for the process (OMP_NUM_THREADS and
// OPENBLAS_NUM_THREADS at load, unless set, and openblas_set_num_threads).
// Results are reproducible at one thread count and not across counts: a
// product's rows are split among the threads, and rows at a split's edge go
// through other kernels (a 130×17 product over k = 4,232 rounds differently
// at 1 and 2 threads). It fails with ErrDisabled, ErrNotFound, or the
// loader's error naming the file.
func Load(threads int) (*Library, error) {
	loadOnce.Do(func() { loaded, loadErr = open(threads) })
	return loaded, loadErr
}

func open(threads int) (*Library, error) {
	path := os.Getenv(EnvLibrary)
	switch {
	case strings.EqualFold(path, Off):
		return nil, ErrDisabled
	case path != "":
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s=%s: %w", EnvLibrary, path, err)
		}
	default:
		for _, c := range candidates {
			if st, err := os.Stat(c); err == nil && !st.IsDir() {
				path = c
				break
			}
		}
		if path == "" {
			return nil, ErrNotFound
		}
	}
	// Read by the libraries' constructors during dlopen, then unset, so
	// that child processes see the environment they were given:
	//   - OPENBLAS_CORETYPE, the kernels (CoreType);
	//   - OMP_NUM_THREADS and OPENBLAS_NUM_THREADS, the thread count. The
	//     OpenMP build's openblas_set_num_threads sets the OpenMP team size
	//     of the calling OS thread only, and Go runs goroutines on many: a
	//     call from another OS thread would start a team of the default
	//     size (every core) for work split threads ways.
	loadEnv := map[string]string{EnvCoreType: CoreType()}
	if threads > 0 {
		loadEnv["OMP_NUM_THREADS"] = strconv.Itoa(threads)
		loadEnv["OPENBLAS_NUM_THREADS"] = strconv.Itoa(threads)
	}
	for name, value := range loadEnv {
		if _, set := os.LookupEnv(name); set || value == "" {
			continue
		}
		if err := os.Setenv(name, value); err != nil {
			return nil, fmt.Errorf("set %s=%s: %w", name, value, err)
		}
		defer os.Unsetenv(name)
	}
	l := &Library{path: path}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.toolrl_openblas_open(cpath, &l.lib); msg != nil {
		return nil, fmt.Errorf("load OpenBLAS %s: %s", path, C.GoString(msg))
	}
	if threads > 0 {
		C.toolrl_openblas_set_threads(&l.lib, C.int(threads))
	}
	return l, nil
}

// EnvCoreType is OpenBLAS's variable that names the kernels to use.
const EnvCoreType = "OPENBLAS_CORETYPE"

// CoreType is the OpenBLAS kernel family this CPU's features support, as
// OPENBLAS_CORETYPE spells it: COOPERLAKE (AVX-512 with BF16), SKYLAKEX
// (AVX-512 F/BW/DQ/VL), HASWELL (AVX2 with FMA), or "" (leave it to
// OpenBLAS).
func CoreType() string {
	x := cpu.X86
	switch {
	case x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL && x.HasAVX512BF16:
		return "COOPERLAKE"
	case x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL:
		return "SKYLAKEX"
	case x.HasAVX2 && x.HasFMA:
		return "HASWELL"
	}
	return ""
}

// Path is the file the library was loaded from.
func (l *Library) Path() string { return l.path }

// Threads is OpenBLAS's thread count.
func (l *Library) Threads() int { return int(C.toolrl_openblas_threads(&l.lib)) }

// Describe names the build: "OpenBLAS 0.3.21 ... (openmp, Cooperlake, threads 2)".
func (l *Library) Describe() string {
	parallel := map[int]string{0: "sequential", 1: "pthreads", 2: "openmp"}[int(C.toolrl_openblas_parallel(&l.lib))]
	return fmt.Sprintf("%s (%s, %s, threads %d)", strings.TrimSpace(C.GoString(C.toolrl_openblas_config(&l.lib))),
		parallel, C.GoString(C.toolrl_openblas_corename(&l.lib)), l.Threads())
}

// Sgemm computes c = alpha·op(a)·op(b) + beta·c in row-major order (BLAS
// semantics, as gonum's Sgemm). It checks that every slice covers the
// elements the product reads or writes, so a wrong stride panics here, as
// gonum does, instead of corrupting memory in C. OpenBLAS splits the output
// among its threads and sums each element over k in one fixed order, so the
// result does not depend on scheduling or on the OS thread that calls (at the
// process's one thread count, see Load). It does depend on where the
// operands lie: the same product with a shifted by 4, 12 or 32 bytes rounds
// differently, so callers that need equal results hand it operands at equal
// alignments (model/train aligns its buffers to 64 bytes).
//
// Calls from several goroutines are serialised (OpenBLAS's thread pool serves
// one caller at a time, with all its threads): code that runs many small
// products at once is better served by a single-threaded kernel per worker.
func (l *Library) Sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
	check := func(name string, s []float32, rows, cols, ld int) {
		if ld < max(1, cols) || (rows > 0 && cols > 0 && len(s) < (rows-1)*ld+cols) {
			panic(fmt.Sprintf("openblas: Sgemm %s: %d elements with leading dimension %d cannot hold %d×%d", name, len(s), ld, rows, cols))
		}
	}
	check("c", c, m, n, ldc)
	if k == 0 {
		ar, ac, br, bc = 0, 0, 0, 0
	}
	check("a", a, ar, ac, lda)
	check("b", b, br, bc, ldb)
	var ap, bp *C.float
	if k > 0 {
		ap, bp = (*C.float)(unsafe.Pointer(&a[0])), (*C.float)(unsafe.Pointer(&b[0]))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	C.toolrl_openblas_sgemm(&l.lib, cbool(tA), cbool(tB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		ap, C.int(max(lda, 1)), bp, C.int(max(ldb, 1)), C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.int(ldc))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
