package export

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// jsonlWriter writes one JSON record per line. Flush is a durable point: the
// buffered lines (and, for gzip, a sync flush of the compressor) reach the
// file and the file is fsynced, so a crash after Flush returns loses nothing
// written before it. With Append it writes the file in place (a log that
// survives a crash record by record); without, it writes a temporary file
// beside it and renames it into place on Close, as the Parquet writer does,
// so a file the path held stays whole until then, and for good after Abort.
type jsonlWriter[T any] struct {
	path  string
	tmp   string // without Append: the temporary file renamed to path on Close
	c     *codec[T]
	file  *os.File
	gz    *gzip.Writer
	buf   *bufio.Writer
	lines [][]byte
	err   error // sticky: a failed write leaves the file in an unknown state
}

func createJSONL[T any](path string, format Format, opts WriterOptions, c *codec[T]) (*jsonlWriter[T], error) {
	var file *os.File
	var err error
	if opts.Append {
		file, err = openForAppend(path)
	} else {
		removeStaleTemps(path)
		file, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", c.kind, err)
	}
	w := &jsonlWriter[T]{path: path, c: c, file: file}
	if !opts.Append {
		w.tmp = file.Name()
	}
	var out io.Writer = file
	if format == JSONLGzip {
		w.gz = gzip.NewWriter(file)
		out = w.gz
	}
	w.buf = bufio.NewWriterSize(out, 1<<20)
	return w, nil
}

// openForAppend opens path for appending, creating it if needed, and cuts a
// last line that has no newline (a write torn by a crash).
func openForAppend(path string) (*os.File, error) {
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	end := info.Size()
	// Walk back from the end in blocks to the last newline.
	block := make([]byte, 64<<10)
	keep := end
	for pos := end; pos > 0; {
		n := int64(len(block))
		if pos < n {
			n = pos
		}
		pos -= n
		if _, err := file.ReadAt(block[:n], pos); err != nil {
			file.Close()
			return nil, err
		}
		if i := bytes.LastIndexByte(block[:n], '\n'); i >= 0 {
			keep = pos + int64(i) + 1
			break
		}
		keep = pos
	}
	if keep != end {
		if err := file.Truncate(keep); err != nil {
			file.Close()
			return nil, err
		}
	}
	if _, err := file.Seek(keep, io.SeekStart); err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

func (w *jsonlWriter[T]) Write(records ...T) error {
	if w.err != nil {
		return w.err
	}
	if w.file == nil {
		return fmt.Errorf("write %s: writer is closed", w.path)
	}
	// Validate and encode everything first, so that a rejected call writes nothing.
	w.lines = w.lines[:0]
	for i := range records {
		if err := w.c.validate(&records[i]); err != nil {
			return fmt.Errorf("write %s to %s: record %d of the batch: %w", w.c.kind, w.path, i, err)
		}
		line, err := w.c.marshal(&records[i])
		if err != nil {
			return fmt.Errorf("write %s to %s: %w", w.c.kind, w.path, err)
		}
		w.lines = append(w.lines, line)
	}
	for _, line := range w.lines {
		w.buf.Write(line)
		if err := w.buf.WriteByte('\n'); err != nil {
			w.err = fmt.Errorf("write %s: %w", w.path, err)
			return w.err
		}
	}
	return nil
}

func (w *jsonlWriter[T]) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.file == nil {
		return fmt.Errorf("flush %s: writer is closed", w.path)
	}
	if err := w.buf.Flush(); err != nil {
		w.err = fmt.Errorf("flush %s: %w", w.path, err)
		return w.err
	}
	if w.gz != nil {
		if err := w.gz.Flush(); err != nil {
			w.err = fmt.Errorf("flush %s: %w", w.path, err)
			return w.err
		}
	}
	if err := w.file.Sync(); err != nil {
		w.err = fmt.Errorf("fsync %s: %w", w.path, err)
		return w.err
	}
	return nil
}

func (w *jsonlWriter[T]) Close() error {
	if w.file == nil {
		return nil
	}
	err := w.buf.Flush()
	if w.gz != nil {
		if cerr := w.gz.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil && w.err == nil && w.tmp != "" {
		// CreateTemp makes the file 0600; a dataset is as readable as os.Create makes files.
		err = w.file.Chmod(0o644)
	}
	if err == nil && w.err == nil {
		err = w.file.Sync()
	}
	if cerr := w.file.Close(); err == nil {
		err = cerr
	}
	w.file = nil
	if err == nil && w.err == nil && w.tmp != "" {
		err = os.Rename(w.tmp, w.path)
	}
	if w.tmp != "" && (err != nil || w.err != nil) {
		os.Remove(w.tmp)
	}
	if w.err != nil {
		return w.err
	}
	if err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	return nil
}

// Abort discards what the writer wrote: without Append the temporary file is
// removed and the path keeps what it held; with Append (lines already in
// place) it is Close.
func (w *jsonlWriter[T]) Abort() error {
	if w.tmp == "" {
		return w.Close()
	}
	if w.file == nil {
		return nil
	}
	w.file.Close()
	w.file = nil
	return os.Remove(w.tmp)
}

// jsonlReader reads one JSON record per line (blank lines are skipped). A
// line of a group yields the group's trajectories one by one.
type jsonlReader[T any] struct {
	path    string
	c       *codec[T]
	file    *os.File
	gz      *gzip.Reader
	br      *bufio.Reader
	line    int
	pending []T
	err     error
}

func openJSONL[T any](path string, format Format, c *codec[T]) (*jsonlReader[T], error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", c.kind, err)
	}
	r := &jsonlReader[T]{path: path, c: c, file: file}
	var in io.Reader = file
	if format == JSONLGzip {
		r.gz, err = gzip.NewReader(file)
		if err != nil {
			file.Close()
			return nil, fmt.Errorf("%s: gzip: %w", path, err)
		}
		in = r.gz
	}
	r.br = bufio.NewReaderSize(in, 1<<20)
	return r, nil
}

func (r *jsonlReader[T]) Next() (T, error) {
	var zero T
	for len(r.pending) == 0 {
		if r.err != nil {
			return zero, r.err
		}
		data, err := r.br.ReadBytes('\n')
		if len(data) > 0 {
			r.line++
			if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 {
				recs, derr := r.c.decode(trimmed)
				if derr != nil {
					r.err = fmt.Errorf("%s line %d: %w", r.path, r.line, derr)
					return zero, r.err
				}
				r.pending = recs
			}
		}
		if errors.Is(err, io.EOF) {
			r.err = io.EOF
		} else if err != nil {
			r.err = fmt.Errorf("%s line %d: %w", r.path, r.line+1, err)
		}
	}
	rec := r.pending[0]
	r.pending = r.pending[1:]
	return rec, nil
}

// Position names where the record Next returned last came from: "PATH line
// N" (every trajectory of a group line has that line).
func (r *jsonlReader[T]) Position() string { return fmt.Sprintf("%s line %d", r.path, r.line) }

func (r *jsonlReader[T]) Close() error {
	if r.file == nil {
		return nil
	}
	if r.gz != nil {
		r.gz.Close()
	}
	err := r.file.Close()
	r.file = nil
	return err
}
