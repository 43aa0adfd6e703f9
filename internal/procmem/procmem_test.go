package procmem

import (
	"runtime"
	"testing"
)

// On Linux both figures are read, and both count 64 MiB just touched (the
// peak is sampled by the kernel, so it may trail the resident figure).
func TestResidentAndPeak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procmem reads Linux's /proc and getrusage")
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	r, p := Resident(), Peak()
	runtime.KeepAlive(buf)
	if r < 64<<20 || p < 64<<20 {
		t.Errorf("resident %d, peak %d: want both ≥ 64 MiB", r, p)
	}
}
