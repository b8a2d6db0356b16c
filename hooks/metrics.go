package hooks

import (
	"context"
	"net/http"
	"sync"
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

	mu    sync.RWMutex
	tools map[string]*toolMetrics
}

// toolMetrics are one tool's collectors, looked up once.
type toolMetrics struct {
	inFlight                prometheus.Gauge
	success, cached, failed prometheus.Counter
	latSuccess, latCached   prometheus.Observer
	latError                prometheus.Observer
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
		tools: map[string]*toolMetrics{},
	}
	m.registry.MustRegister(m.calls, m.errors, m.latency, m.inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) forTool(name string) *toolMetrics {
	m.mu.RLock()
	tm := m.tools[name]
	m.mu.RUnlock()
	if tm != nil {
		return tm
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if tm = m.tools[name]; tm == nil {
		tm = &toolMetrics{
			inFlight:   m.inFlight.WithLabelValues(name),
			success:    m.calls.WithLabelValues(name, OutcomeSuccess),
			cached:     m.calls.WithLabelValues(name, OutcomeCached),
			failed:     m.calls.WithLabelValues(name, OutcomeError),
			latSuccess: m.latency.WithLabelValues(name, OutcomeSuccess),
			latCached:  m.latency.WithLabelValues(name, OutcomeCached),
			latError:   m.latency.WithLabelValues(name, OutcomeError),
		}
		m.tools[name] = tm
	}
	return tm
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
			tm := m.forTool(call.Tool.Name())
			tm.inFlight.Inc()
			defer func() {
				if p := recover(); p != nil {
					out = tools.Panicked(call, p)
				}
				tm.inFlight.Dec()
				d := time.Since(call.Started).Seconds()
				switch {
				case out.Success && call.Cached:
					tm.cached.Inc()
					tm.latCached.Observe(d)
				case out.Success:
					tm.success.Inc()
					tm.latSuccess.Observe(d)
				default:
					tm.failed.Inc()
					tm.latError.Observe(d)
					m.errors.WithLabelValues(call.Tool.Name(), string(out.Class)).Inc()
				}
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
