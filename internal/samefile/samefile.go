// Package samefile refuses an output path that is one of a command's inputs,
// compared as files (device and inode), not as names: a symlink or a hard
// link to the input, or a path spelt differently, is the same file.
package samefile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Path is a command-line path and the flag that named it, for messages.
type Path struct {
	Flag string // e.g. "--in"
	Path string
}

// Same reports whether a and b name one file: the same cleaned absolute
// path, or, when both exist, the same device and inode (os.SameFile on
// os.Stat of both, so symlinks are followed and hard links match).
func Same(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	if errA == nil && errB == nil && absA == absB {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// Refuse returns an error naming both paths when out is the same file as one
// of ins (writing out would destroy that input), and nil otherwise. Empty
// paths are ignored.
func Refuse(out Path, ins ...Path) error {
	for _, in := range ins {
		if Same(in.Path, out.Path) {
			return fmt.Errorf("%s %s is the same file as %s %s: writing it would destroy the input", out.Flag, out.Path, in.Flag, in.Path)
		}
	}
	return nil
}
