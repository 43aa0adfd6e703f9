package traj

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestLogprobsBadMatchesScalar checks the vector pass against the scalar
// one, and both against the rule: one bad value (NaN, ±Inf, > 0, a
// nonzero value under mask 0), or -0 and +0 under mask 0 (which pass), put
// at every position of arrays of every length up to 40: in the vector body
// and in the tail.
func TestLogprobsBadMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		v    float32
		mask uint8
		bad  bool
	}{
		{float32(math.NaN()), 1, true}, {float32(math.Inf(1)), 1, true}, {float32(math.Inf(-1)), 1, true},
		{1e-30, 1, true}, {math.SmallestNonzeroFloat32, 1, true}, {0.5, 1, true},
		{-0.25, 0, true}, {-math.SmallestNonzeroFloat32, 0, true},
		{0, 0, false}, {float32(math.Copysign(0, -1)), 0, false}, {0, 1, false}, {-80, 1, false}, {-math.MaxFloat32, 1, false},
	}
	for n := 1; n <= 40; n++ {
		for at := 0; at < n; at++ {
			for _, c := range cases {
				lp := make([]float32, n)
				mask := make(Mask, n)
				for i := range lp {
					if rng.IntN(4) > 0 {
						lp[i], mask[i] = -float32(rng.ExpFloat64()), 1
					}
				}
				lp[at], mask[at] = c.v, c.mask
				got, scalar := logprobsBad(lp, mask), logprobsBadScalar(lp, mask)
				if got != c.bad || scalar != c.bad {
					t.Fatalf("n %d, value %v (mask %d) at %d: logprobsBad %v, scalar %v, want %v", n, c.v, c.mask, at, got, scalar, c.bad)
				}
			}
		}
	}
}

// TestMaskMismatch checks the word-at-a-time scan against a plain loop: one
// wrong value at every position of masks of every length up to 30.
func TestMaskMismatch(t *testing.T) {
	for n := 0; n <= 30; n++ {
		for _, want := range []uint8{0, 1} {
			mask := make(Mask, n)
			for i := range mask {
				mask[i] = want
			}
			if got := maskMismatch(mask, want); got != -1 {
				t.Fatalf("n %d, all %d: %d, want -1", n, want, got)
			}
			for at := 0; at < n; at++ {
				for _, bad := range []uint8{1 - want, 2} {
					m := append(Mask(nil), mask...)
					m[at] = bad
					if got := maskMismatch(m, want); got != at {
						t.Fatalf("n %d, want %d, %d at %d: got %d", n, want, bad, at, got)
					}
				}
			}
		}
	}
}

// TestFirstNonFinite puts NaN, +Inf or -Inf at every position of arrays up
// to 200 long (first chunk, later chunks, a partial last chunk), after an
// optional earlier one, and checks the index found; finite extremes pass.
func TestFirstNonFinite(t *testing.T) {
	for n := 0; n <= 200; n++ {
		vs := make([]float32, n)
		for i := range vs {
			vs[i] = float32(i%7) - 3
		}
		if n > 0 {
			vs[n-1] = math.MaxFloat32
			vs[0] = -math.MaxFloat32
		}
		if got := FirstNonFinite(vs); got != -1 {
			t.Fatalf("n %d, all finite: %d", n, got)
		}
		for at := 0; at < n; at += 1 + at/16 {
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
				w := append([]float32(nil), vs...)
				w[at] = bad
				if at+70 < n {
					w[at+70] = bad // a later one does not hide the first
				}
				if got := FirstNonFinite(w); got != at {
					t.Fatalf("n %d, %v at %d: %d", n, bad, at, got)
				}
			}
		}
	}
}

// TestCheckMaskEveryPosition refuses a value above 1 (2, 0x10, 0x80: other
// bits of the byte) at every position of masks up to 20 long, naming the
// index, and accepts masks of 0s and 1s.
func TestCheckMaskEveryPosition(t *testing.T) {
	for n := 0; n <= 20; n++ {
		mask := make(Mask, n)
		for i := range mask {
			mask[i] = uint8(i % 2)
		}
		if err := checkMask("t", "loss_mask", mask); err != nil {
			t.Fatalf("n %d, 0s and 1s: %v", n, err)
		}
		for at := 0; at < n; at++ {
			for _, bad := range []uint8{2, 0x10, 0x80} {
				m := append(Mask(nil), mask...)
				m[at] = bad
				err := checkMask("t", "loss_mask", m)
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("loss_mask[%d]", at)) {
					t.Fatalf("n %d, %d at %d: %v", n, bad, at, err)
				}
			}
		}
	}
}

// TestAnyNegative puts a negative id (-1, MinInt32) at every position of
// arrays up to 20 long, starting 8-byte aligned, 4-byte aligned, or at an
// odd address (ids viewing a byte buffer, as a Parquet reader's do), each
// one ending at the end of its allocation (-race's checkptr refuses a view
// that reaches past it), and checks that only those are found.
func TestAnyNegative(t *testing.T) {
	for off := 0; off < 3; off++ {
		for n := 0; n <= 20; n++ {
			var ids []int32
			switch off {
			case 0, 1:
				ids = make([]int32, off+n)[off:]
			case 2:
				buf := make([]byte, 1+4*n)
				ids = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(buf[1:]))), n)
			}
			for i := range ids {
				ids[i] = int32(i * 1000)
			}
			if anyNegative(ids) {
				t.Fatalf("offset %d, n %d: no negative id, but one found", off, n)
			}
			for at := 0; at < n; at++ {
				for _, v := range []int32{-1, math.MinInt32} {
					ids[at] = v
					if !anyNegative(ids) {
						t.Fatalf("offset %d, n %d: %d at %d not found", off, n, v, at)
					}
					ids[at] = int32(at * 1000)
				}
			}
		}
	}
}
