package train

import (
	"errors"
	"runtime"
	"sync"

	"github.com/toolrl/toolrl/internal/openblas"
)

// Tile and block sizes of the packed GEMM (gemm_simd.go): a 4×32 register
// tile, k in blocks of 256, columns in blocks of 256.
const (
	tileM  = 4
	tileN  = 32
	blockK = 256
	blockN = 256
)

// loadedBLAS is the OpenBLAS sgemm takes when one is installed (internal/openblas:
// $TOOLRL_OPENBLAS, else Debian's libopenblas0-openmp), loaded on first use
// with GOMAXPROCS threads; nil when none is, or TOOLRL_OPENBLAS=off.
func loadedBLAS() *openblas.Library {
	lib, err := openblas.Load(runtime.GOMAXPROCS(0))
	if err != nil {
		return nil
	}
	return lib
}

// GEMMError is why an OpenBLAS that was asked for did not load: nil when one
// loaded, when none is installed (the pure-Go kernel is then the GEMM, as
// documented) and when TOOLRL_OPENBLAS=off; else the loader's error, naming
// the file (a TOOLRL_OPENBLAS path that is missing or not OpenBLAS), which
// would otherwise leave a run on the slower kernel without a word.
func GEMMError() error {
	_, err := openblas.Load(runtime.GOMAXPROCS(0))
	if err == nil || errors.Is(err, openblas.ErrNotFound) || errors.Is(err, openblas.ErrDisabled) {
		return nil
	}
	return err
}

// sgemm computes c = alpha·op(a)·op(b) + beta·c (BLAS semantics, row-major)
// through OpenBLAS when one is loaded (loadedBLAS), else the pure-Go kernel
// (sgemmGo). OpenBLAS serves one caller at a time with all its threads (the
// library serialises calls), so goroutines that run products at once call
// sgemmGo instead (gemmInWorker).
func sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m*n*k >= 32*32*32 {
		if lib := loadedBLAS(); lib != nil {
			lib.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			return
		}
	}
	sgemmGo(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// sgemmGo is sgemm in pure Go. With the simd kernel (GOEXPERIMENT=simd on an AVX2+FMA CPU) it packs both
// operands and runs the register-tiled kernel; otherwise, and for tiny
// products, it calls gonum's Sgemm. Either path sums every output element in
// a fixed order, so results do not depend on goroutine scheduling.
func sgemmGo(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmGoWith(nil, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// packScratch is the packing buffers of one caller of sgemmGoWith, reused
// from call to call.
type packScratch struct{ a, b []float32 }

// grow returns s's buffers with room for na and nb floats.
func (s *packScratch) grow(na, nb int) (a, b []float32) {
	if cap(s.a) < na {
		s.a = make([]float32, na)
	}
	if cap(s.b) < nb {
		s.b = make([]float32, nb)
	}
	return s.a[:na], s.b[:nb]
}

// sgemmGoWith is sgemmGo packing into sc's buffers on one goroutine, for a
// caller that is itself one of several workers; with sc nil it allocates its
// buffers and splits large products over two goroutines. The result is the
// same either way (each element summed in the same order).
func sgemmGoWith(sc *packScratch, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !useKernel || m*n*k < 32*32*32 {
		impl.Sgemm(trans(tA), trans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if beta != 1 {
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(row)
			} else {
				for j := range row {
					row[j] *= beta
				}
			}
		}
	}
	mp := (m + tileM - 1) / tileM
	np := (n + tileN - 1) / tileN
	var ap, bp []float32
	if sc != nil {
		ap, bp = sc.grow(mp*tileM*min(k, blockK), np*tileN*min(k, blockK))
	} else {
		ap = make([]float32, mp*tileM*min(k, blockK))
		bp = make([]float32, np*tileN*min(k, blockK))
	}
	for k0 := 0; k0 < k; k0 += blockK {
		kc := min(blockK, k-k0)
		packA(ap, tA, a, lda, m, k0, kc, alpha)
		packB(bp, tB, b, ldb, n, k0, kc)
		workers := 2
		if mp < 8 || sc != nil {
			workers = 1
		}
		work := func(w int) {
			var tmp [tileM * tileN]float32
			for j0 := 0; j0 < np; j0 += blockN / tileN {
				j1 := min(np, j0+blockN/tileN)
				for ip := w; ip < mp; ip += workers {
					apan := ap[ip*tileM*kc : (ip+1)*tileM*kc]
					rows := min(tileM, m-ip*tileM)
					for jp := j0; jp < j1; jp++ {
						bpan := bp[jp*tileN*kc : (jp+1)*tileN*kc]
						cols := min(tileN, n-jp*tileN)
						off := ip*tileM*ldc + jp*tileN
						if rows == tileM && cols == tileN {
							kernel4x32(kc, apan, bpan, c[off:], ldc)
							continue
						}
						clear(tmp[:])
						kernel4x32(kc, apan, bpan, tmp[:], tileN)
						for r := range rows {
							dst := c[off+r*ldc : off+r*ldc+cols]
							for q := range dst {
								dst[q] += tmp[r*tileN+q]
							}
						}
					}
				}
			}
		}
		if workers == 1 {
			work(0) // on the caller's goroutine: no spawn per product
			continue
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { work(w) })
		}
		wg.Wait()
	}
}

// packA copies alpha·op(a)[:, k0:k0+kc] into row panels of tileM rows, each
// stored k-major ([kc][tileM]), zero-padded past m.
func packA(dst []float32, tA bool, a []float32, lda, m, k0, kc int, alpha float32) {
	mp := (m + tileM - 1) / tileM
	for ip := range mp {
		pan := dst[ip*tileM*kc : (ip+1)*tileM*kc]
		i0 := ip * tileM
		if i0+tileM > m {
			packAEdge(pan, tA, a, lda, m, i0, k0, kc, alpha)
			continue
		}
		if tA {
			// op(a)'s rows i0..i0+3 at column p are a's row k0+p, columns
			// i0..i0+3: one contiguous run of tileM per p.
			for p := range kc {
				src := a[(k0+p)*lda+i0 : (k0+p)*lda+i0+tileM : (k0+p)*lda+i0+tileM]
				d := pan[p*tileM : p*tileM+tileM : p*tileM+tileM]
				d[0], d[1], d[2], d[3] = alpha*src[0], alpha*src[1], alpha*src[2], alpha*src[3]
			}
			continue
		}
		// The four rows read side by side, the panel written in order.
		r0 := a[i0*lda+k0 : i0*lda+k0+kc]
		r1 := a[(i0+1)*lda+k0 : (i0+1)*lda+k0+kc]
		r2 := a[(i0+2)*lda+k0 : (i0+2)*lda+k0+kc]
		r3 := a[(i0+3)*lda+k0 : (i0+3)*lda+k0+kc]
		for p := range kc {
			d := pan[p*tileM : p*tileM+tileM : p*tileM+tileM]
			d[0], d[1], d[2], d[3] = alpha*r0[p], alpha*r1[p], alpha*r2[p], alpha*r3[p]
		}
	}
}

// packAEdge packs the last, partial row panel (rows i0 to m), zero past m.
func packAEdge(pan []float32, tA bool, a []float32, lda, m, i0, k0, kc int, alpha float32) {
	for r := range tileM {
		i := i0 + r
		if i >= m {
			for p := range kc {
				pan[p*tileM+r] = 0
			}
			continue
		}
		if tA {
			for p := range kc {
				pan[p*tileM+r] = alpha * a[(k0+p)*lda+i]
			}
		} else {
			row := a[i*lda+k0 : i*lda+k0+kc]
			for p, v := range row {
				pan[p*tileM+r] = alpha * v
			}
		}
	}
}

// packB copies op(b)[k0:k0+kc, :] into column panels of tileN columns, each
// stored k-major ([kc][tileN]), zero-padded past n.
func packB(dst []float32, tB bool, b []float32, ldb, n, k0, kc int) {
	np := (n + tileN - 1) / tileN
	for jp := range np {
		pan := dst[jp*tileN*kc : (jp+1)*tileN*kc]
		cols := min(tileN, n-jp*tileN)
		if tB {
			for q := range tileN {
				if q >= cols {
					for p := range kc {
						pan[p*tileN+q] = 0
					}
					continue
				}
				row := b[(jp*tileN+q)*ldb+k0 : (jp*tileN+q)*ldb+k0+kc]
				for p, v := range row {
					pan[p*tileN+q] = v
				}
			}
			continue
		}
		for p := range kc {
			src := b[(k0+p)*ldb+jp*tileN : (k0+p)*ldb+jp*tileN+cols]
			d := pan[p*tileN : (p+1)*tileN]
			copy(d, src)
			clear(d[cols:])
		}
	}
}

// kernelGeneric is the portable tile kernel: c[4×32] += ap·bp.
func kernelGeneric(kc int, ap, bp []float32, c []float32, ldc int) {
	var acc [tileM * tileN]float32
	for p := range kc {
		a := ap[p*tileM : (p+1)*tileM]
		b := bp[p*tileN : (p+1)*tileN]
		for r := range tileM {
			for q := range tileN {
				acc[r*tileN+q] += a[r] * b[q]
			}
		}
	}
	for r := range tileM {
		row := c[r*ldc : r*ldc+tileN]
		for q := range row {
			row[q] += acc[r*tileN+q]
		}
	}
}

// KernelName says which GEMM the trainer uses: "openblas <its build>" when
// one is loaded, else the pure-Go path's "simd-avx512" or "simd-avx2-fma"
// (built with GOEXPERIMENT=simd) or "gonum-blas32".
func KernelName() string {
	if lib := loadedBLAS(); lib != nil {
		return "openblas " + lib.Describe() + ", pure Go " + kernelName + " in workers"
	}
	if err := GEMMError(); err != nil {
		return kernelName + " (OpenBLAS asked for and not loaded: " + err.Error() + ")"
	}
	return kernelName
}
