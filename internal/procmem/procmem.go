// Package procmem reads this process's memory use: the resident set now
// (Resident, /proc/self/status's VmRSS) and at its peak (Peak, getrusage's
// ru_maxrss), for the benchmarks' and model build's reports. Both are 0
// where the platform does not give them.
package procmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Resident is the resident set size now, in bytes (VmRSS), or 0 when it
// cannot be read.
func Resident() int64 {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
