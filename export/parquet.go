package export

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// parquetWriter writes one row per record into a temporary file beside the
// destination and renames it into place on Close, so a reader never sees a
// file without its footer. Flush ends the current row group, which bounds the
// writer's memory; a Parquet file is readable only once Close has written the
// footer, so a crash before Close loses the file (use JSONL for a log that
// must survive a crash record by record).
type parquetWriter[T, R any] struct {
	path    string
	tmp     string
	opts    WriterOptions
	rows    *rowCodec[T, R]
	file    *os.File
	layout  *layout
	pw      *parquet.GenericWriter[any]
	encoded []any
	pending []T // the first row group, held until the columns are fixed
	err     error
	closed  bool
}

func createParquet[T, R any](path string, opts WriterOptions, rows *rowCodec[T, R]) (*parquetWriter[T, R], error) {
	if opts.RowsPerGroup < 0 {
		return nil, fmt.Errorf("create %s: RowsPerGroup is %d, want ≥ 0", path, opts.RowsPerGroup)
	}
	for key := range opts.Metadata {
		if strings.HasPrefix(key, "toolrl.") {
			return nil, fmt.Errorf("create %s: metadata key %q: the toolrl. prefix is reserved", path, key)
		}
	}
	for _, part := range opts.RewardParts {
		if err := checkPartName(part); err != nil {
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
	}
	removeStaleTemps(path)
	file, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", rows.kind, err)
	}
	return &parquetWriter[T, R]{path: path, tmp: file.Name(), opts: opts, rows: rows, file: file}, nil
}

// removeStaleTemps removes the temporary files that earlier writers of path
// left when they were killed before Close (.NAME.tmp-DIGITS beside it, as
// os.CreateTemp names them): they can never be completed. Only names of that
// exact shape are touched, so another output's temporary files (even one
// whose name extends this one, .NAME.tmp-x.parquet.tmp-N) stay. Two writers of
// one path at once are not supported: the second would remove the first's
// file. Failures are ignored; a leftover only costs disk.
func removeStaleTemps(path string) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+".tmp-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || suffix == "" || !e.Type().IsRegular() || strings.Trim(suffix, "0123456789") != "" {
			continue
		}
		os.Remove(filepath.Join(dir, e.Name()))
	}
}

// start fixes the columns: the declared parts and those of the first row group.
func (w *parquetWriter[T, R]) start(first []T) error {
	set := make(map[string]bool)
	for _, p := range w.opts.RewardParts {
		set[p] = true
	}
	for i := range first {
		for p := range w.rows.parts(&first[i]) {
			set[p] = true
		}
	}
	parts := make([]string, 0, len(set))
	for p := range set {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	l, err := newLayout(reflect.TypeFor[R](), parts, nil)
	if err != nil {
		return fmt.Errorf("write %s to %s: %w", w.rows.kind, w.path, err)
	}
	rowsPerGroup := w.rowsPerGroup()
	options := []parquet.WriterOption{
		l.schema,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(rowsPerGroup),
		parquet.KeyValueMetadata(MetaSchema, w.rows.kind.Schema()),
		parquet.KeyValueMetadata(MetaRewardParts, strings.Join(parts, ",")),
	}
	for k, v := range w.opts.Metadata {
		options = append(options, parquet.KeyValueMetadata(k, v))
	}
	config, err := parquet.NewWriterConfig(options...)
	if err != nil {
		return fmt.Errorf("write %s: parquet writer config: %w", w.path, err)
	}
	// parquet.CreatedBy drops the space before "(build"; write the
	// conventional "app version V (build B)" ourselves.
	config.CreatedBy = fmt.Sprintf("toolrl version %s (build %s)", moduleVersion(), runtime.Version())
	w.layout = l
	// GenericWriter[any] maps each row value onto the column buffers
	// directly; the plain Writer first deconstructs it into a parquet.Row,
	// which costs 2x the time and 5x the allocations (BenchmarkWrite).
	w.pw = parquet.NewGenericWriter[any](w.file, config)
	return nil
}

func (w *parquetWriter[T, R]) Write(records ...T) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("write %s: writer is closed", w.path)
	}
	for i := range records {
		if err := w.rows.validate(&records[i]); err != nil {
			return fmt.Errorf("write %s to %s: record %d of the batch: %w", w.rows.kind, w.path, i, err)
		}
	}
	if w.layout == nil {
		// The columns are fixed by the first row group: hold its records.
		w.pending = append(w.pending, records...)
		if int64(len(w.pending)) < w.rowsPerGroup() {
			return nil
		}
		return w.startPending()
	}
	return w.write(records)
}

func (w *parquetWriter[T, R]) rowsPerGroup() int64 {
	if w.opts.RowsPerGroup == 0 {
		return DefaultRowsPerGroup
	}
	return w.opts.RowsPerGroup
}

// startPending fixes the columns from the held records and writes them.
func (w *parquetWriter[T, R]) startPending() error {
	if err := w.start(w.pending); err != nil {
		w.err = err
		return err
	}
	pending := w.pending
	w.pending = nil
	if err := w.write(pending); err != nil {
		w.err = err
		return err
	}
	return nil
}

func (w *parquetWriter[T, R]) write(records []T) error {
	// Encode the whole batch before writing any of it: a record with an
	// unknown reward part rejects the call and writes nothing.
	w.encoded = w.encoded[:0]
	var static R
	sv := reflect.ValueOf(&static).Elem()
	for i := range records {
		if err := w.rows.toRow(&records[i], &static); err != nil {
			return fmt.Errorf("write %s to %s: %s: %w", w.rows.kind, w.path, w.rows.id(&records[i]), err)
		}
		row, err := w.layout.encode(sv, w.rows.parts(&records[i]))
		if err != nil {
			return fmt.Errorf("write %s to %s: %s: %w", w.rows.kind, w.path, w.rows.id(&records[i]), err)
		}
		w.encoded = append(w.encoded, row)
	}
	if _, err := w.pw.Write(w.encoded); err != nil {
		w.err = fmt.Errorf("write %s: %w", w.path, err)
		return w.err
	}
	clear(w.encoded)
	return nil
}

// Flush ends the current row group.
func (w *parquetWriter[T, R]) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("flush %s: writer is closed", w.path)
	}
	if w.layout == nil {
		if len(w.pending) == 0 {
			return nil
		}
		if err := w.startPending(); err != nil {
			return err
		}
	}
	if err := w.pw.Flush(); err != nil {
		w.err = fmt.Errorf("flush %s: %w", w.path, err)
		return w.err
	}
	return nil
}

// Close writes the footer, fsyncs and renames the file into place. After a
// failed write it removes the temporary file and returns the first error.
func (w *parquetWriter[T, R]) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.err == nil && w.layout == nil {
		w.startPending()
	}
	if w.err == nil {
		if err := w.pw.Close(); err != nil {
			w.err = fmt.Errorf("close %s: %w", w.path, err)
		}
	}
	if w.err == nil {
		// CreateTemp makes the file 0600; a dataset is as readable as os.Create makes files.
		if err := w.file.Chmod(0o644); err != nil {
			w.err = fmt.Errorf("close %s: %w", w.path, err)
		}
	}
	if w.err == nil {
		if err := w.file.Sync(); err != nil {
			w.err = fmt.Errorf("fsync %s: %w", w.path, err)
		}
	}
	if err := w.file.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("close %s: %w", w.path, err)
	}
	if w.err == nil {
		if err := os.Rename(w.tmp, w.path); err != nil {
			w.err = fmt.Errorf("close %s: %w", w.path, err)
		}
	}
	if w.err != nil {
		os.Remove(w.tmp)
		return w.err
	}
	return nil
}

// Abort discards what the writer wrote: the temporary file is removed and the
// path keeps what it held.
func (w *parquetWriter[T, R]) Abort() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.file.Close()
	return os.Remove(w.tmp)
}

// parquetReader reads the rows of a file written by parquetWriter (or any file
// with the same columns: extra columns are ignored).
type parquetReader[T, R any] struct {
	path   string
	rows   *rowCodec[T, R]
	schema string // the records' schema version (parquetSchema)
	closer io.Closer
	layout *layout
	pr     *parquet.GenericReader[any]
	buf    []parquet.Row // a batch of rows in layout.schema's column order
	pos    int           // next row of buf to return
	next   error         // what the last ReadRows returned with its rows
	row    int64
	err    error
}

// readBatch is how many rows a reader decodes per ReadRows call.
const readBatch = 64

func openParquet[T, R any](path string, rows *rowCodec[T, R]) (*parquetReader[T, R], error) {
	f, closer, err := openParquetFile(path)
	if err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) (*parquetReader[T, R], error) {
		closer.Close()
		return nil, fmt.Errorf("%s: "+format, append([]any{path}, args...)...)
	}
	kind, schema, err := parquetSchema(f)
	if err != nil {
		return fail("%v", err)
	}
	if kind != rows.kind {
		return fail("holds %s (%s), not %s", kind, schema, rows.kind)
	}
	parts, err := partsOfFile(f.Schema(), reflect.TypeFor[R]())
	if err != nil {
		return fail("%v", err)
	}
	l, err := newLayout(reflect.TypeFor[R](), parts, columnRenames(f.Schema()))
	if err != nil {
		return fail("%v", err)
	}
	pr, err := newRowReader(f, l.schema)
	if err != nil {
		return fail("%v", err)
	}
	return &parquetReader[T, R]{path: path, rows: rows, schema: schema, closer: closer, layout: l, pr: pr}, nil
}

// newRowReader reads f's rows in schema's column order, converting a file
// that another writer laid out differently (parquet-go panics when the
// columns cannot convert).
func newRowReader(f *parquet.File, schema *parquet.Schema) (pr *parquet.GenericReader[any], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("columns do not convert to the toolrl schema: %v", p)
		}
	}()
	return parquet.NewGenericReader[any](f, schema), nil
}

func (r *parquetReader[T, R]) Next() (rec T, err error) {
	if r.err != nil {
		return rec, r.err
	}
	defer func() {
		// parquet-go can panic on a corrupt page; name the row instead.
		if p := recover(); p != nil {
			r.err = fmt.Errorf("%s row %d: corrupt parquet data: %v", r.path, r.row+1, p)
			err = r.err
		}
	}()
	if r.pos == len(r.buf) {
		if r.next != nil {
			r.err = r.next
			if !errors.Is(r.next, io.EOF) {
				r.err = fmt.Errorf("%s row %d: %w", r.path, r.row+1, r.next)
			}
			return rec, r.err
		}
		if cap(r.buf) == 0 {
			r.buf = make([]parquet.Row, readBatch)
		}
		n, err := r.pr.ReadRows(r.buf[:readBatch])
		r.buf, r.pos, r.next = r.buf[:n], 0, err
		if n == 0 {
			if err == nil {
				err = io.EOF
			}
			r.next = err
			return r.Next()
		}
	}
	row := reflect.New(r.layout.row)
	if err := r.layout.schema.Reconstruct(row.Interface(), r.buf[r.pos]); err != nil {
		r.err = fmt.Errorf("%s row %d: %w", r.path, r.row+1, err)
		return rec, r.err
	}
	r.pos++
	r.row++
	var static R
	parts := r.layout.decode(row, reflect.ValueOf(&static).Elem())
	rec = r.rows.fromRow(&static, parts, r.schema)
	if err := r.rows.validate(&rec); err != nil {
		r.err = fmt.Errorf("%s row %d: %w", r.path, r.row, err)
		var zero T
		return zero, r.err
	}
	return rec, nil
}

// Position names where the record Next returned last came from: "PATH row
// N" (from 1).
func (r *parquetReader[T, R]) Position() string { return fmt.Sprintf("%s row %d", r.path, r.row) }

func (r *parquetReader[T, R]) Close() error {
	if r.closer == nil {
		return nil
	}
	r.pr.Close()
	err := r.closer.Close()
	r.closer = nil
	return err
}

// moduleVersion is toolrl's module version as the binary was built, for the
// file's created_by.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
