// Package metricsserver serves a verb's Prometheus /metrics and /healthz over
// HTTP: the one server start of toolrl's long-running verbs (advantage serve,
// learn, rollout).
package metricsserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is a running /metrics server. Close stops it.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Handler serves /metrics from g and /healthz: 200 "ok" while healthy
// returns nil (healthy may be nil: always ok), else 503 with the error.
func Handler(g prometheus.Gatherer, healthy func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if healthy != nil {
			if err := healthy(); err != nil {
				http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// Start listens on addr (host:port; port 0 picks a free one) and serves h in
// the background until Close. The error names addr; errors while serving are
// logged to logger.
func Start(addr string, h http.Handler, logger *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	s := &Server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server", "addr", ln.Addr().String(), "err", err)
		}
	}()
	logger.Info("serving /metrics and /healthz", "addr", ln.Addr().String())
	return s, nil
}

// Addr is the address the server listens on (the chosen port when addr had
// port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting requests in progress finish for up to 2 s.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}
