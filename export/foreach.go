package export

import (
	"context"
	"errors"
	"io"
)

// ForEachRecord opens the dataset file at path with open (OpenTrajectories,
// OpenAdvantages) and calls add with each of its records, in order; it
// returns nil at the file's end, else the first error, which is ctx's once
// ctx is done.
func ForEachRecord[T any](ctx context.Context, path string, open func(string) (Reader[T], error), add func(*T)) error {
	r, err := open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	return forEach(Cancelable(ctx, r), add)
}

// forEach calls add with each record of r up to its end (nil) or an error.
func forEach[T any](r Reader[T], add func(*T)) error {
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		add(&rec)
	}
}

// Cancelable returns r as a Reader that, before each record, returns ctx's
// error once ctx is done (Reader's Next takes no context). Closing it
// closes r.
func Cancelable[T any](ctx context.Context, r Reader[T]) Reader[T] {
	return cancelable[T]{ctx.Err, r}
}

// cancelable stops a reader once stopped (a context's Err) reports an error.
type cancelable[T any] struct {
	stopped func() error
	Reader[T]
}

func (c cancelable[T]) Next() (T, error) {
	if err := c.stopped(); err != nil {
		var zero T
		return zero, err
	}
	return c.Reader.Next()
}
