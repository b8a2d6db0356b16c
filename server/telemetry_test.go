package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/wink-mcp/wink-mcp/internal/mcptest"
	"github.com/wink-mcp/wink-mcp/policy"
	"github.com/wink-mcp/wink-mcp/sections"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/telemetry"
)

// tracedClient is a client of a probe server that reports its requests
// through tel (nil: a server without telemetry).
func tracedClient(t testing.TB, tel *telemetry.Telemetry) *mcptest.Client {
	t.Helper()
	tree, err := sections.NewTree(probeSection())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Name: "test", Version: "1", Tree: tree,
		Policies:  []policy.Policy{failingPolicy{}, denyError{}},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Telemetry: tel,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return mcptest.NewClient(t, srv.MCP(), "traced")
}

// TestStageSpans: a traced call has a span for each stage it went through
// that takes time, under the request's span, one after the other; the
// stage that refused or failed the call says why, and the commit has a
// span when the call commits.
func TestStageSpans(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tel, err := telemetry.With(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)), nil, "pipe")
	if err != nil {
		t.Fatal(err)
	}
	c := tracedClient(t, tel)
	all := []string{"validate", "serialise", "policies", "transaction", "handler"}
	tests := []struct {
		name   string
		tool   string
		args   string
		stages []string
		failed string // the stage whose span is an error
		reason string // its description
	}{
		{"a call that commits", "probe_add", `{"by":1}`, append(all, "commit"), "", ""},
		{"invalid arguments", "probe_add", `{"by":"x"}`, []string{"validate"}, "validate", "Invalid arguments: /by: expected integer, got string"},
		{"a policy's denial", "probe_error", `{"by":1}`, []string{"validate", "serialise", "policies"}, "policies", "no errors"},
		{"a tool's failure", "probe_fail", `{"by":1}`, all, "handler", "Nothing doing."},
		{"a failed commit", "probe_add", `{"by":-13}`, append(all, "commit"), "commit", "Tool 'probe_add' failed: unlucky"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(spans.Ended())
			c.Call(context.Background(), tt.tool, json.RawMessage(tt.args), nil)
			ended := spans.Ended()[before:]
			request := ended[len(ended)-1]
			if request.SpanKind() != oteltrace.SpanKindServer || request.Name() != "tools/call "+tt.tool {
				t.Fatalf("the last span to end is %s %q, want the request's", request.SpanKind(), request.Name())
			}
			stages := ended[:len(ended)-1]
			slices.SortFunc(stages, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
			var names []string
			for i, s := range stages {
				names = append(names, s.Name())
				if s.Parent().SpanID() != request.SpanContext().SpanID() {
					t.Errorf("%s is not under the request's span", s.Name())
				}
				if i > 0 && s.StartTime().Before(stages[i-1].EndTime()) {
					t.Errorf("%s starts before %s ends", s.Name(), stages[i-1].Name())
				}
				failed := s.Status().Description != "" || s.Status().Code != 0
				if want := s.Name() == tt.failed; failed != want || want && s.Status().Description != tt.reason {
					t.Errorf("%s: status %v %q, want failed %v with %q", s.Name(), s.Status().Code, s.Status().Description, want, tt.reason)
				}
			}
			if !slices.Equal(names, tt.stages) {
				t.Errorf("stages %v, want %v", names, tt.stages)
			}
		})
	}
}

// BenchmarkTelemetry measures a call that commits, in process, without
// telemetry, with telemetry whose sampler keeps no trace (the metrics
// only), and with every call traced (seven spans, batched to an exporter
// that discards them).
func BenchmarkTelemetry(b *testing.B) {
	metrics := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	with := func(sampler sdktrace.Sampler) *telemetry.Telemetry {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		tel, err := telemetry.With(tp, metrics, "pipe")
		if err != nil {
			b.Fatal(err)
		}
		return tel
	}
	for _, bm := range []struct {
		name string
		tel  func() *telemetry.Telemetry
	}{
		{"off", func() *telemetry.Telemetry { return nil }},
		{"unsampled", func() *telemetry.Telemetry { return with(sdktrace.NeverSample()) }},
		{"traced", func() *telemetry.Telemetry { return with(sdktrace.AlwaysSample()) }},
	} {
		b.Run(bm.name, func(b *testing.B) {
			c := tracedClient(b, bm.tel())
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				c.Call(context.Background(), "probe_add", map[string]int{"by": i%7 + 1}, nil)
			}
		})
	}
}

// TestTaskMethodSpans: the task methods, which the server answers itself
// rather than mcp-go, get a request span too, in the trace that their
// _meta continues, with the JSON-RPC code of an error answer.
func TestTaskMethodSpans(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tel, err := telemetry.With(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)), nil, "pipe")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := sections.NewTree(probeSection())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Name: "test", Version: "1", Tree: tree, Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": map[string]any{
		"taskId": "no-such-task",
		"_meta":  map[string]any{"traceparent": "00-" + traceID + "-b7ad6b7169203331-01"},
	}})
	resp, _ := json.Marshal(server.HandleMessage(context.Background(), srv.MCP(), msg))
	var reply struct{ Error *struct{ Code int } }
	if json.Unmarshal(resp, &reply) != nil || reply.Error == nil {
		t.Fatalf("tasks/get of no task: %s", resp)
	}
	var got sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "tasks/get" {
			got = s
		}
	}
	if got == nil || got.SpanKind() != oteltrace.SpanKindServer || got.SpanContext().TraceID().String() != traceID {
		t.Fatalf("the span of tasks/get: %+v", got)
	}
	attrs := map[string]string{}
	for _, a := range got.Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	if attrs["mcp.method.name"] != "tasks/get" || attrs["jsonrpc.request.id"] != "7" || attrs["error.type"] != strconv.Itoa(reply.Error.Code) {
		t.Errorf("the span of tasks/get has %v", attrs)
	}
}
