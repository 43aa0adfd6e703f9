package openblas

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
)

// load returns the process's library or skips (fails under CI=true, where
// `make setup` has installed it). It loads one thread, fewer than OpenMP's
// default on a machine of 2 or more cores, so that a count that held on the
// loading OS thread only would show (TestSgemmIsDeterministic).
func load(t *testing.T) *Library {
	t.Helper()
	lib, err := Load(1)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("openblas: %v (CI=true: required; run `make setup`)", err)
		}
		t.Skipf("openblas: %v (run `make setup`)", err)
	}
	return lib
}

// TestSgemmTransposes: every transpose combination, alpha and beta, on
// small integers whose products and sums float32 holds exactly, so the
// expected values are exact (model/train's TestSgemmMatchesNaive checks
// random products against a float64 loop through this library too).
func TestSgemmTransposes(t *testing.T) {
	lib := load(t)
	// a = [[1 2 3] [4 5 6]] (2×3), b = [[1 0] [2 1] [0 3]] (3×2):
	// a·b = [[5 11] [14 23]].
	a, at := []float32{1, 2, 3, 4, 5, 6}, []float32{1, 4, 2, 5, 3, 6}
	b, bt := []float32{1, 0, 2, 1, 0, 3}, []float32{1, 2, 0, 0, 1, 3}
	want := []float32{2*5 + 3*1, 2*11 + 3*2, 2*14 + 3*3, 2*23 + 3*4} // alpha 2, beta 3 over c = 1 2 3 4
	for _, tc := range []struct {
		tA, tB   bool
		a, b     []float32
		lda, ldb int
	}{{false, false, a, b, 3, 2}, {true, false, at, b, 2, 2}, {false, true, a, bt, 3, 3}, {true, true, at, bt, 2, 3}} {
		c := []float32{1, 2, 3, 4}
		lib.Sgemm(tc.tA, tc.tB, 2, 2, 3, 2, tc.a, tc.lda, tc.b, tc.ldb, 3, c, 2)
		for i := range c {
			if c[i] != want[i] {
				t.Fatalf("tA=%v tB=%v: c = %v, want %v", tc.tA, tc.tB, c, want)
			}
		}
	}
}

// TestSgemmIsDeterministic: the same product again, from fresh OS threads
// (goroutines locked to their own), gives the same bits: OpenBLAS splits the
// output, not the sum over k, and every OS thread uses the process's one
// thread count (the OpenMP build keeps the count per calling thread, so a
// count set on one thread only would split the others' calls differently).
func TestSgemmIsDeterministic(t *testing.T) {
	lib := load(t)
	for _, sz := range [][3]int{{256, 192, 4096}, {130, 17, 4232}, {4232, 256, 128}, {37, 640, 128}} {
		m, n, k := sz[0], sz[1], sz[2]
		a, b := make([]float32, k*m), make([]float32, k*n)
		r := rand.New(rand.NewPCG(5, 6))
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		first := make([]float32, m*n)
		lib.Sgemm(true, false, m, n, k, 1, a, m, b, n, 0, first, n)
		got := make(chan []float32)
		for range 4 {
			go func() {
				runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
				c := make([]float32, m*n)
				lib.Sgemm(true, false, m, n, k, 1, a, m, b, n, 0, c, n)
				got <- c
			}()
		}
		for range 4 {
			again := <-got
			for i := range again {
				if math.Float32bits(again[i]) != math.Float32bits(first[i]) {
					t.Fatalf("%v: c[%d] = %v on another OS thread, first %v", sz, i, again[i], first[i])
				}
			}
		}
	}
}

// TestSgemmRefusesShortSlices: a stride that would read past a slice panics
// in Go with the operand named, instead of reading memory in C.
func TestSgemmRefusesShortSlices(t *testing.T) {
	lib := load(t)
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "Sgemm b: 15 elements with leading dimension 4 cannot hold 4×4") {
			t.Fatalf("recovered %q", msg)
		}
	}()
	lib.Sgemm(false, false, 4, 4, 4, 1, make([]float32, 16), 4, make([]float32, 15), 4, 0, make([]float32, 16), 4)
}

func TestDescribeNamesTheBuild(t *testing.T) {
	lib := load(t)
	d := lib.Describe()
	if !strings.Contains(d, "OpenBLAS") || !strings.Contains(d, "threads 1)") {
		t.Fatalf("Describe() = %q", d)
	}
	// On a CPU with AVX2 and FMA, the kernels are not the generic fallback
	// OpenBLAS's own detection picks on CPUs it does not know.
	if core := CoreType(); core != "" && os.Getenv(EnvCoreType) == "" {
		if !strings.Contains(strings.ToLower(d), strings.ToLower(core)) {
			t.Fatalf("Describe() = %q, want core %s", d, core)
		}
	}
	if os.Getenv(EnvCoreType) != "" && !strings.Contains(d, os.Getenv(EnvCoreType)) {
		t.Logf("%s set by the caller: %s", EnvCoreType, d)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Setenv(EnvLibrary, "OFF")
	if _, err := open(1); !errors.Is(err, ErrDisabled) {
		t.Fatalf("off: %v", err)
	}
	t.Setenv(EnvLibrary, "/nonexistent/libopenblas.so.0")
	if _, err := open(1); err == nil || !strings.Contains(err.Error(), "TOOLRL_OPENBLAS=/nonexistent/libopenblas.so.0") {
		t.Fatalf("missing file: %v", err)
	}
	notBLAS := t.TempDir() + "/libnot.so"
	if err := os.WriteFile(notBLAS, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvLibrary, notBLAS)
	if _, err := open(1); err == nil || !strings.Contains(err.Error(), "load OpenBLAS "+notBLAS) {
		t.Fatalf("not a library: %v", err)
	}
}

// TestSgemmFromManyGoroutines: calls that overlap are serialised, each
// getting the product it asked for (run with -race in make test).
func TestSgemmFromManyGoroutines(t *testing.T) {
	lib := load(t)
	const n = 96
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
			for i := range n {
				a[i*n+i] = float32(g + 1) // (g+1)·I
			}
			for i := range b {
				b[i] = float32(i % 13)
			}
			for range 20 {
				lib.Sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
			}
			for i := range c {
				if c[i] != float32(g+1)*b[i] {
					done <- fmt.Errorf("goroutine %d: c[%d] = %v, want %v", g, i, c[i], float32(g+1)*b[i])
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
