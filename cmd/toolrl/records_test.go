package main

import (
	"errors"
	"io"
	"testing"

	"github.com/toolrl/toolrl/export"
)

// drain reads every record of r and closes it.
func drain[T any](t *testing.T, r export.Reader[T]) []T {
	t.Helper()
	defer r.Close()
	var out []T
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}
