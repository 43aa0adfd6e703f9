package serve

import (
	"cmp"
	"context"
	"log/slog"

	"github.com/toolrl/toolrl/internal/metricsserver"
	"github.com/toolrl/toolrl/stream"
)

// RunOptions configures Run: a Service's options and those of the process
// around it.
type RunOptions struct {
	Options
	// Listen is the address (host:port) /metrics and /healthz
	// (Service.Handler) are served on; "" serves none.
	Listen string
	// Build names the binary in the build-info metric of the registry Run
	// makes when Registry is nil (metricsserver.NewRegistry).
	Build metricsserver.Build
}

// An OptionsError is an error of Run in what its caller asked, found before
// the service reads anything: options New refuses, or (Listen true) a
// Listen address that cannot be served on. Run's other errors are failures
// to reach Redis or to start the service.
type OptionsError struct {
	Listen bool
	Err    error
}

func (e *OptionsError) Error() string { return e.Err.Error() }
func (e *OptionsError) Unwrap() error { return e.Err }

// Run is the advantage service as a process: it connects to the Redis at
// url (stream.Connect; see stream.ParseURL), makes a Service (New), serves
// its /metrics and /healthz on Listen, and runs it (Service.Run) until ctx
// is cancelled, when it returns nil once the batches in flight are
// committed. It closes what it opened.
func Run(ctx context.Context, url string, opts RunOptions) error {
	logger := cmp.Or(opts.Logger, slog.Default())
	client, err := stream.Connect(ctx, url, stream.ConnectOptions{ClientName: "toolrl-advantage"})
	if err != nil {
		return err
	}
	defer client.Close()
	if opts.Registry == nil {
		opts.Registry = metricsserver.NewRegistry(opts.Build)
	}
	svc, err := New(client, opts.Options)
	if err != nil {
		return &OptionsError{Err: err}
	}
	if opts.Listen != "" {
		srv, err := metricsserver.Start(opts.Listen, svc.Handler(), logger)
		if err != nil {
			return &OptionsError{Listen: true, Err: err}
		}
		defer srv.Close()
	}
	logger.Info("advantage service", "redis", stream.Redact(url), "job", opts.Job)
	return svc.Run(ctx)
}
