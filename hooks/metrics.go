package hooks

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// MetricsConfig configures the Prometheus metrics.
type MetricsConfig struct {
	Enabled bool `json:"enabled" jsonschema:"Whether metrics are collected."`
}

// Outcome labels of the call metrics.
const (
	OutcomeSuccess = "success"
	OutcomeCached  = "cached"
	OutcomeError   = "error"
)

// metrics are the Prometheus collectors of one Hooks, in a registry of
// their own (with the Go runtime and process collectors).
type metrics struct {
	registry *prometheus.Registry
	calls    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wink_tool_calls_total",
			Help: "Tool calls by tool and outcome (success, cached or error).",
		}, []string{"tool", "outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wink_tool_errors_total",
			Help: "Failed tool calls by tool and error class.",
		}, []string{"tool", "class"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wink_tool_call_duration_seconds",
			Help:    "Tool call latency by tool and outcome, from the call's start to its result.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"tool", "outcome"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wink_tool_calls_in_flight",
			Help: "Tool calls in flight by tool.",
		}, []string{"tool"}),
	}
	m.registry.MustRegister(m.calls, m.errors, m.latency, m.inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Metrics returns the metrics stage: for every call it counts the call by
// tool and outcome (success, cached or error) and, when it failed, by
// error class; it observes the latency from the call's start by tool and
// outcome, and keeps a gauge of the calls in flight by tool. The metrics are
// served by MetricsHandler (on /metrics in HTTP mode) and collected in
// stdio mode too. Nil when metrics are off.
func (h *Hooks) Metrics() tools.Middleware {
	if h.metrics == nil {
		return nil
	}
	m := h.metrics
	return func(next tools.Handler) tools.Handler {
		return func(ctx context.Context, call *tools.Call) (out *tools.Outcome) {
			name := call.Tool.Name()
			m.inFlight.WithLabelValues(name).Inc()
			defer func() {
				if p := recover(); p != nil {
					out = tools.Panicked(call, p)
				}
				m.inFlight.WithLabelValues(name).Dec()
				outcome := OutcomeSuccess
				switch {
				case out.Success && out.Cached:
					outcome = OutcomeCached
				case !out.Success:
					outcome = OutcomeError
					m.errors.WithLabelValues(name, string(out.Class)).Inc()
				}
				m.calls.WithLabelValues(name, outcome).Inc()
				m.latency.WithLabelValues(name, outcome).Observe(time.Since(call.Started).Seconds())
			}()
			return next(ctx, call)
		}
	}
}

// Registry returns the registry of the metrics, nil when they are off;
// a program that serves metrics of its own can gather from it.
func (h *Hooks) Registry() *prometheus.Registry {
	if h.metrics == nil {
		return nil
	}
	return h.metrics.registry
}
