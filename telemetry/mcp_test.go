package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// instrumented is an mcp-go server instrumented by a Telemetry whose spans
// and metrics the test reads.
type instrumented struct {
	srv    *mcpserver.MCPServer
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
}

func newInstrumented(t *testing.T) *instrumented {
	t.Helper()
	in := &instrumented{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(in.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(in.reader))
	tel, err := With(tp, mp, "pipe")
	if err != nil {
		t.Fatal(err)
	}
	hooks := &mcpserver.Hooks{}
	opts := append(tel.Instrument(hooks), mcpserver.WithHooks(hooks),
		mcpserver.WithToolCapabilities(false), mcpserver.WithPromptCapabilities(false), mcpserver.WithResourceCapabilities(false, false))
	in.srv = mcpserver.NewMCPServer("test", "1", opts...)
	in.srv.AddTool(mcp.NewTool("ok"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		SetSession(ctx, "sid_0123456789ab")
		return mcp.NewToolResultText("done"), nil
	})
	in.srv.AddTool(mcp.NewTool("fails"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("it failed"), nil
	})
	in.srv.AddPrompt(mcp.NewPrompt("greet"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greet", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hi"))}), nil
	})
	in.srv.AddResource(mcp.NewResource("test://there", "there"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "x"}}, nil
	})
	in.srv.AddResource(mcp.NewResource("test://gone", "gone"), func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		SetErrorCode(ctx, mcp.RESOURCE_NOT_FOUND)
		return nil, errors.New("gone")
	})
	return in
}

// request sends a request and returns the span it ended.
func (in *instrumented) request(t *testing.T, msg string) sdktrace.ReadOnlySpan {
	t.Helper()
	before := len(in.spans.Ended())
	in.srv.HandleMessage(context.Background(), json.RawMessage(msg))
	ended := in.spans.Ended()
	if len(ended) != before+1 {
		t.Fatalf("%s: %d spans ended, want 1", msg, len(ended)-before)
	}
	return ended[before]
}

// TestRequestSpans: each request is a server span named and described as
// the MCP semantic conventions say, continuing the trace of its _meta.
func TestRequestSpans(t *testing.T) {
	in := newInstrumented(t)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tests := []struct {
		name     string
		msg      string
		span     string
		attrs    map[string]string // besides mcp.method.name and network.transport
		absent   []string
		errorMsg string // the span's status description when it is an error
	}{
		{
			name: "a tool call continues the client's trace",
			msg:  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","_meta":{"traceparent":"00-` + traceID + `-` + parentID + `-01"}}}`,
			span: "tools/call ok",
			attrs: map[string]string{"gen_ai.tool.name": "ok", "gen_ai.operation.name": "execute_tool", "jsonrpc.request.id": "1",
				"mcp.session.id": "sid_0123456789ab"},
			absent: []string{"error.type"},
		},
		{
			name:     "a tool's error result",
			msg:      `{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"fails"}}`,
			span:     "tools/call fails",
			attrs:    map[string]string{"gen_ai.tool.name": "fails", "jsonrpc.request.id": "two", "error.type": "tool_error"},
			absent:   []string{"rpc.response.status_code"},
			errorMsg: "",
		},
		{
			name:     "an unknown tool",
			msg:      `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`,
			span:     "tools/call nope",
			attrs:    map[string]string{"error.type": "-32602", "rpc.response.status_code": "-32602"},
			errorMsg: "tool 'nope' not found: tool not found",
		},
		{
			name:  "a prompt",
			msg:   `{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"greet"}}`,
			span:  "prompts/get greet",
			attrs: map[string]string{"gen_ai.prompt.name": "greet"},
		},
		{
			name:   "a resource is not in the span's name",
			msg:    `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"test://there"}}`,
			span:   "resources/read",
			attrs:  map[string]string{"mcp.resource.uri": "test://there"},
			absent: []string{"error.type"},
		},
		{
			name:     "the server's own error code",
			msg:      `{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"test://gone"}}`,
			span:     "resources/read",
			attrs:    map[string]string{"error.type": "-32002", "rpc.response.status_code": "-32002"},
			errorMsg: "gone",
		},
		{
			name:     "a method mcp-go does not know",
			msg:      `{"jsonrpc":"2.0","id":7,"method":"nonsense/call","params":{}}`,
			span:     "nonsense/call",
			attrs:    map[string]string{"error.type": "_OTHER"},
			absent:   []string{"rpc.response.status_code"},
			errorMsg: "Method nonsense/call not found",
		},
		{
			name:  "initialize reports the protocol version agreed",
			msg:   `{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
			span:  "initialize",
			attrs: map[string]string{"mcp.protocol.version": "2025-06-18"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := in.request(t, tt.msg)
			if s.Name() != tt.span {
				t.Errorf("span name %q, want %q", s.Name(), tt.span)
			}
			if s.SpanKind() != trace.SpanKindServer {
				t.Errorf("span kind %v, want server", s.SpanKind())
			}
			got := map[string]string{}
			for _, kv := range s.Attributes() {
				got[string(kv.Key)] = kv.Value.String()
			}
			want := map[string]string{"network.transport": "pipe"}
			var method struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal([]byte(tt.msg), &method)
			want["mcp.method.name"] = method.Method
			for k, v := range tt.attrs {
				want[k] = v
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
			for _, k := range tt.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s = %q, want none", k, got[k])
				}
			}
			if _, isErr := want["error.type"]; isErr != (s.Status().Code == codes.Error) || isErr && s.Status().Description != tt.errorMsg {
				t.Errorf("status %v %q, want an error %v with %q", s.Status().Code, s.Status().Description, isErr, tt.errorMsg)
			}
		})
	}
	first := in.spans.Ended()[0]
	if got := first.Parent(); got.TraceID().String() != traceID || got.SpanID().String() != parentID || !got.IsRemote() {
		t.Errorf("parent %v, want the remote span %s of trace %s", got, parentID, traceID)
	}
}

// fakeSession is a client session of mcp-go, for the session metric.
type fakeSession struct{ id string }

func (s fakeSession) Initialize()       {}
func (s fakeSession) Initialized() bool { return true }
func (s fakeSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return make(chan mcp.JSONRPCNotification, 1)
}
func (s fakeSession) SessionID() string { return s.id }

// TestMetrics: every request's duration is recorded with the attributes
// of the conventions, and so is a session's when it ends.
func TestMetrics(t *testing.T) {
	in := newInstrumented(t)
	ctx := context.Background()
	if err := in.srv.RegisterSession(ctx, fakeSession{"s1"}); err != nil {
		t.Fatal(err)
	}
	in.request(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok"}}`)
	in.request(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fails"}}`)
	in.request(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fails"}}`)
	in.srv.UnregisterSession(ctx, "s1")

	var rm metricdata.ResourceMetrics
	if err := in.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]map[attribute.Distinct]uint64{}
	var sets []attribute.Set
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				t.Fatalf("%s is a %T, want a histogram", m.Name, m.Data)
			}
			if m.Unit != "s" {
				t.Errorf("%s: unit %q, want s", m.Name, m.Unit)
			}
			counts[m.Name] = map[attribute.Distinct]uint64{}
			for _, dp := range h.DataPoints {
				counts[m.Name][dp.Attributes.Equivalent()] = dp.Count
				sets = append(sets, dp.Attributes)
			}
		}
	}
	tests := []struct {
		metric string
		attrs  []attribute.KeyValue
		count  uint64
	}{
		{"mcp.server.operation.duration", []attribute.KeyValue{
			attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "ok"),
			attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("network.transport", "pipe"),
		}, 1},
		{"mcp.server.operation.duration", []attribute.KeyValue{
			attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "fails"),
			attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("network.transport", "pipe"),
			attribute.String("error.type", "tool_error"),
		}, 2},
		{"mcp.server.session.duration", []attribute.KeyValue{attribute.String("network.transport", "pipe")}, 1},
	}
	for _, tt := range tests {
		set := attribute.NewSet(tt.attrs...)
		if got := counts[tt.metric][set.Equivalent()]; got != tt.count {
			t.Errorf("%s %v: count %d, want %d; recorded: %v", tt.metric, tt.attrs, got, tt.count, sets)
		}
	}
}

// TestTracerOnlyWhenTraced: the server's stages have a tracer only when
// traces are exported, and a nil Telemetry has none.
func TestTracerOnlyWhenTraced(t *testing.T) {
	var none *Telemetry
	if none.Tracer() != nil {
		t.Error("a nil Telemetry has a tracer")
	}
	metricsOnly, err := With(nil, sdkmetric.NewMeterProvider(), "tcp")
	if err != nil {
		t.Fatal(err)
	}
	if metricsOnly.Tracer() != nil {
		t.Error("a Telemetry that exports no traces has a tracer")
	}
}
