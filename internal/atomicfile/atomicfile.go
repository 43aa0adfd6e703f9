// Package atomicfile replaces a file whole: what is written goes to a
// temporary file beside it (.NAME.tmp-N), which is synced and renamed over
// the path only when every write succeeded. A reader sees the old file or
// the new one, never part of one, and a failed or interrupted write leaves
// the old file as it was (the temporary file removed). It is the one such
// writer of toolrl's whole-file outputs: settings records, summaries,
// charts and tables, benchmark reports, generated prompts.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data (mode 0644).
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write replaces path with what write writes (buffered; mode 0644). An error
// from write, or from writing the file, leaves path as it was.
func Write(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	buf := bufio.NewWriterSize(f, 1<<16)
	if err := write(buf); err != nil {
		return err
	}
	if err := buf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	// CreateTemp makes the file 0600; an output is as readable as os.Create makes files.
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}
