package hooks

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func TestMetrics(t *testing.T) {
	cfg := Defaults()
	cfg.Cache.Enabled = true
	h := newHarness(t, cfg)
	cs := h.client("s1")
	ctx := context.Background()
	cs.Call(ctx, "p_read", map[string]any{}, nil)
	cs.Call(ctx, "p_read", map[string]any{}, nil)
	cs.Call(ctx, "p_write", map[string]any{"by": 1}, nil)
	cs.Call(ctx, "p_write", map[string]any{"by": -1}, nil)
	cs.Call(ctx, "p_write", map[string]any{"by": "x"}, nil)

	families, err := h.hooks.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName() + labels(m)
			switch {
			case m.Counter != nil:
				got[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				got[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				got[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	for key, want := range map[string]float64{
		`wink_tool_calls_total{outcome="success",tool="p_read"}`:                  1,
		`wink_tool_calls_total{outcome="cached",tool="p_read"}`:                   1,
		`wink_tool_calls_total{outcome="success",tool="p_write"}`:                 1,
		`wink_tool_calls_total{outcome="error",tool="p_write"}`:                   2,
		`wink_tool_errors_total{class="failure",tool="p_write"}`:                  1,
		`wink_tool_errors_total{class="validation",tool="p_write"}`:               1,
		`wink_tool_call_duration_seconds{outcome="error",tool="p_write"}_count`:   2,
		`wink_tool_call_duration_seconds{outcome="success",tool="p_read"}_count`:  1,
		`wink_tool_call_duration_seconds{outcome="cached",tool="p_read"}_count`:   1,
		`wink_tool_calls_in_flight{tool="p_write"}`:                               0,
		`wink_tool_calls_in_flight{tool="p_read"}`:                                0,
		`wink_tool_call_duration_seconds{outcome="success",tool="p_write"}_count`: 1,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}

	// The handler serves the Prometheus text format.
	rec := httptest.NewRecorder()
	h.hooks.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	for _, want := range []string{
		"# TYPE wink_tool_calls_total counter",
		`wink_tool_calls_total{outcome="cached",tool="p_read"} 1`,
		"# TYPE wink_tool_call_duration_seconds histogram",
		"# TYPE wink_tool_calls_in_flight gauge",
		"go_goroutines",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestMetricsOff(t *testing.T) {
	h := newHarness(t, Config{})
	if h.hooks.Metrics() != nil || h.hooks.MetricsHandler() != nil || h.hooks.Registry() != nil {
		t.Error("metrics on with Enabled false")
	}
}

// labels renders a metric's labels as {a="x",b="y"}, sorted as Gather
// sorts them.
func labels(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ",") + "}"
}
