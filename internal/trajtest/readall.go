package trajtest

import (
	"errors"
	"io"
	"testing"
)

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
