package main

import (
	"context"
	"fmt"
	"log/slog"
)

// goredisLog sends go-redis's own log lines (a dial retried inside its
// connection pool, five lines a second while a server is down) to slog at
// debug level. The verbs report the error that ends an operation themselves,
// naming the URL with its password hidden; the pool's lines repeated it as
// noise ahead of the real error.
type goredisLog struct{}

func (goredisLog) Printf(ctx context.Context, format string, v ...any) {
	slog.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
}
