//go:build !linux

package procmem

// Peak is 0 where the build does not read the peak resident set size.
func Peak() int64 { return 0 }
