//go:build !linux

package main

// peakRSS is 0 where the build does not read the peak resident set size.
func peakRSS() int64 { return 0 }
