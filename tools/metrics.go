package tools

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the Prometheus series of an executor (namespace toolrl_tools):
// calls by tool and outcome class, call latency by tool, and calls in flight.
// The tool label is the registry name, or "unknown" for a name the registry
// lacks, so that model-written names cannot grow the series without bound.
type Metrics struct {
	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

// NewMetrics makes the series and registers them with reg (none when reg is
// nil). Pass the result in ExecutorOptions.Metrics.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "toolrl", Subsystem: "tools", Name: "calls_total",
			Help: `Tool calls by tool and class ("ok", or the error class: timeout, schema, ...).`}, []string{"tool", "class"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "toolrl", Subsystem: "tools", Name: "call_seconds",
			Help: "Execution time of tool calls that ran (from holding the slots to the result).", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"tool"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "toolrl", Subsystem: "tools", Name: "calls_in_flight",
			Help: "Tool executions running now."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.calls, m.latency, m.inFlight} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
