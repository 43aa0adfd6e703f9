package trajtest

import (
	"errors"
	"io"
	"testing"
)

// Writer is what export's writers are (export.Writer[T]).
type Writer[T any] interface {
	Write(records ...T) error
	Close() error
}

// WriteAll writes records to w in one call and closes it, failing the test
// if err (the error of the call that created w), the write or the close
// fails. Its first arguments are what export.CreateTrajectories and
// export.CreateAdvantages return:
//
//	w, err := export.CreateTrajectories(path, export.WriterOptions{})
//	trajtest.WriteAll(t, w, err, ts...)
func WriteAll[T any](tb testing.TB, w Writer[T], err error, records ...T) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("create: %v", err)
	}
	if err := w.Write(records...); err != nil {
		w.Close()
		tb.Fatalf("write %d records: %v", len(records), err)
	}
	if err := w.Close(); err != nil {
		tb.Fatalf("close: %v", err)
	}
}

// Reader is what export's readers are (export.Reader[T]): Next returns
// io.EOF after the last record.
type Reader[T any] interface {
	Next() (T, error)
	Close() error
}

// ReadAll returns every record of r and closes it, failing the test if err
// (the error of the call that opened r) or a read fails. Its arguments are
// what export.OpenTrajectories and export.OpenAdvantages return:
//
//	r, err := export.OpenTrajectories(path)
//	ts := trajtest.ReadAll(t, r, err)
func ReadAll[T any](tb testing.TB, r Reader[T], err error) []T {
	tb.Helper()
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	defer r.Close()
	var out []T
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			tb.Fatalf("read after %d records: %v", len(out), err)
		}
		out = append(out, rec)
	}
}
