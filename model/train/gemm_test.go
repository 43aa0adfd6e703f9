package train

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// TestSgemmMatchesNaive checks every transpose combination and ragged edges
// against a float64 triple loop, for sgemm (OpenBLAS when one loads) and the
// pure-Go sgemmGo.
func TestSgemmMatchesNaive(t *testing.T) {
	t.Logf("sgemm: %s", KernelName())
	backends := map[string]func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int){"sgemm": sgemm, "sgemmGo": sgemmGo}
	if lib := loadedBLAS(); lib != nil {
		backends["openblas"] = lib.Sgemm // below sgemm's size threshold too
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("no OpenBLAS loaded (CI=true: make setup installs it): %v", GEMMError())
	}
	for name, mul := range backends {
		t.Run(name, func(t *testing.T) { testSgemmMatchesNaive(t, mul) })
	}
}

func testSgemmMatchesNaive(t *testing.T, sgemm func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][3]int{{37, 45, 300}, {64, 64, 64}, {5, 100, 70}, {130, 17, 513}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				a, b := make([]float32, m*k), make([]float32, k*n)
				for i := range a {
					a[i] = float32(r.NormFloat64())
				}
				for i := range b {
					b[i] = float32(r.NormFloat64())
				}
				c := make([]float32, m*n)
				for i := range c {
					c[i] = float32(r.NormFloat64())
				}
				want := make([]float64, m*n)
				for i := range m {
					for j := range n {
						var s float64
						for p := range k {
							av, bv := a[i*k+p], b[p*n+j]
							if tA {
								av = a[p*m+i]
							}
							if tB {
								bv = b[j*k+p]
							}
							s += float64(av) * float64(bv)
						}
						want[i*n+j] = 0.5*s + 2*float64(c[i*n+j])
					}
				}
				lda, ldb := k, n
				if tA {
					lda = m
				}
				if tB {
					ldb = k
				}
				sgemm(tA, tB, m, n, k, 0.5, a, lda, b, ldb, 2, c, n)
				for i := range c {
					if math.Abs(float64(c[i])-want[i]) > 1e-3*(1+math.Abs(want[i])) {
						t.Fatalf("%v tA=%v tB=%v: c[%d] = %v, want %v", sz, tA, tB, i, c[i], want[i])
					}
				}
			}
		}
	}
}

func TestKernelMatchesGeneric(t *testing.T) {
	const kc = 33
	ap, bp := make([]float32, kc*tileM), make([]float32, kc*tileN)
	for i := range ap {
		ap[i] = float32(i%7) - 3
	}
	for i := range bp {
		bp[i] = float32(i%5) - 2
	}
	c1, c2 := make([]float32, 2*tileM*tileN), make([]float32, 2*tileM*tileN)
	kernel4x32(kc, ap, bp, c1, 2*tileN)
	kernelGeneric(kc, ap, bp, c2, 2*tileN)
	for i := range c1 {
		if c1[i] != c2[i] {
			t.Fatalf("kernel %s: c[%d] = %v, generic %v", kernelName, i, c1[i], c2[i])
		}
	}
}

func TestExp32(t *testing.T) {
	for x := float32(-80); x < 80; x += 0.0137 {
		got, want := float64(exp32(x)), math.Exp(float64(x))
		if math.Abs(got-want) > 4e-7*want {
			t.Fatalf("exp32(%v) = %v, want %v", x, got, want)
		}
	}
	if exp32(-100) != 0 || !math.IsInf(float64(exp32(100)), 1) {
		t.Fatal("exp32 out-of-range handling")
	}
}
