//go:build linux

package procmem

import "syscall"

// Peak is the process's peak resident set size in bytes (getrusage's
// ru_maxrss, which Linux gives in KiB), or 0 when it cannot be read.
func Peak() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
