package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/wink-mcp/wink-mcp/session"
)

// otlpReceiver is an OpenTelemetry collector for the tests: it keeps the
// spans and metrics it is sent over OTLP (gRPC or HTTP with protobuf), and
// counts the connections made to it.
type otlpReceiver struct {
	conns   atomic.Int64
	mu      sync.Mutex
	traces  []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricspb.ExportMetricsServiceRequest
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// startReceiver serves a receiver of protocol ("grpc" or "http/protobuf")
// on addr ("127.0.0.1:0" for any port) until the test ends, and returns it
// with its endpoint, or nil when addr is taken.
func startReceiver(t *testing.T, protocol, addr string) (*otlpReceiver, string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, ""
	}
	r := &otlpReceiver{}
	cl := countingListener{ln, &r.conns}
	if protocol == "grpc" {
		gs := grpc.NewServer()
		coltracepb.RegisterTraceServiceServer(gs, traceService{r: r})
		colmetricspb.RegisterMetricsServiceServer(gs, metricsService{r: r})
		go func() { _ = gs.Serve(cl) }()
		t.Cleanup(gs.Stop)
	} else {
		mux := http.NewServeMux()
		mux.HandleFunc("/v1/traces", func(w http.ResponseWriter, req *http.Request) {
			var m coltracepb.ExportTraceServiceRequest
			if receive(w, req, &m, &coltracepb.ExportTraceServiceResponse{}) {
				r.keep(&m, nil)
			}
		})
		mux.HandleFunc("/v1/metrics", func(w http.ResponseWriter, req *http.Request) {
			var m colmetricspb.ExportMetricsServiceRequest
			if receive(w, req, &m, &colmetricspb.ExportMetricsServiceResponse{}) {
				r.keep(nil, &m)
			}
		})
		hs := &http.Server{Handler: mux}
		go func() { _ = hs.Serve(cl) }()
		t.Cleanup(func() { _ = hs.Close() })
	}
	return r, "http://" + ln.Addr().String()
}

// receive decodes the body of an OTLP/HTTP request into m and answers
// resp; it reports whether the body decoded.
func receive(w http.ResponseWriter, req *http.Request, m, resp proto.Message) bool {
	body, err := io.ReadAll(req.Body)
	if err != nil || proto.Unmarshal(body, m) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return false
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
	return true
}

func (r *otlpReceiver) keep(tr *coltracepb.ExportTraceServiceRequest, mr *colmetricspb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tr != nil {
		r.traces = append(r.traces, tr)
	}
	if mr != nil {
		r.metrics = append(r.metrics, mr)
	}
}

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *otlpReceiver
}

func (s traceService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.r.keep(req, nil)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type metricsService struct {
	colmetricspb.UnimplementedMetricsServiceServer
	r *otlpReceiver
}

func (s metricsService) Export(_ context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	s.r.keep(nil, req)
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

// span is a received span, as the tests read it.
type span struct {
	name, trace, id, parent string
	attrs, resource         map[string]string
	failed                  bool
}

// spans returns every span received.
func (r *otlpReceiver) spans() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, req := range r.traces {
		for _, rs := range req.ResourceSpans {
			res := attrMap(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, span{
						name: s.Name, trace: hex.EncodeToString(s.TraceId), id: hex.EncodeToString(s.SpanId),
						parent: hex.EncodeToString(s.ParentSpanId), attrs: attrMap(s.Attributes), resource: res,
						failed: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					})
				}
			}
		}
	}
	return out
}

// points returns the attributes of each data point received of the
// histogram named metric.
func (r *otlpReceiver) points(metric string) []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]string
	for _, req := range r.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name == metric {
						for _, dp := range m.GetHistogram().GetDataPoints() {
							out = append(out, attrMap(dp.Attributes))
						}
					}
				}
			}
		}
	}
	return out
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

// has reports whether every key of want is in got with its value.
func has(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// TestTelemetry runs the server over stdio (exporting over gRPC) and over
// HTTP (exporting over HTTP) with the OTLP environment variables pointing
// at a receiver, and finds in what it received a span per request, named
// and described as the MCP semantic conventions say and continuing the
// client's trace, the spans of the call's stages under it, and the
// metrics; no handle in any of it; and stdout holding only protocol
// frames.
func TestTelemetry(t *testing.T) {
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	plan := map[string]any{"objective": "trace me", "initial_steps": []string{"a", "b"}}
	// missingCall is a resource that does not exist, which the server
	// answers with its own code (-32002) rather than mcp-go's.
	const missingCall = "wink://session/calls/nope"
	tests := []struct {
		transport, protocol, network, version string
		// drive makes the calls with traceparent in the first's _meta: a
		// call that succeeds, one answered with an error result, and one
		// of an unknown tool (and over stdio a read of missingCall). It
		// returns the handle of the first call's session and stops the
		// server.
		drive func(t *testing.T, traceparent string) string
	}{
		{
			transport: "stdio", protocol: "grpc", network: "pipe", version: "2025-11-25",
			drive: func(t *testing.T, traceparent string) string {
				p := start(t, "")
				p.initialize()
				var r result
				decode(t, p.call(1, "tools/call", map[string]any{"name": "planning_setup_plan", "arguments": plan, "_meta": map[string]any{"traceparent": traceparent}}), &r)
				p.call(2, "tools/call", map[string]any{"name": "planning_update_step", "arguments": map[string]any{"step_id": 9, "status": "done"}})
				if f := p.call(3, "tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}}); f.Error == nil || f.Error.Code != -32602 {
					t.Fatalf("an unknown tool: %+v, want error -32602", f)
				}
				if f := p.call(4, "resources/read", map[string]any{"uri": missingCall}); f.Error == nil || f.Error.Code != -32002 {
					t.Fatalf("a missing resource: %+v, want error -32002", f)
				}
				p.closeStdin()
				if code := p.wait(); code != 0 {
					t.Fatalf("exit code %d; stderr:\n%s", code, p.stderr)
				}
				checkFrames(t, p.out)
				checkStderr(t, p.stderr.String())
				return r.session(t)
			},
		},
		{
			transport: "http", protocol: "http/protobuf", network: "tcp", version: "2026-07-28",
			drive: func(t *testing.T, traceparent string) string {
				s := serveHTTP(t, "--store", "memory")
				c := &httpClient{url: s.url}
				meta := modernMeta()
				meta["traceparent"] = traceparent
				var r result
				if err := json.Unmarshal(c.post(t, "tools/call", "planning_setup_plan", map[string]any{"name": "planning_setup_plan", "arguments": plan, "_meta": meta}), &r); err != nil {
					t.Fatal(err)
				}
				c.call(t, "planning_update_step", map[string]any{"step_id": 9, "status": "done"})
				if _, err := c.send("tools/call", "no_such_tool", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}, "_meta": modernMeta()}); err == nil {
					t.Fatal("an unknown tool was answered")
				}
				s.p.signal(syscall.SIGTERM)
				if code := s.p.wait(); code != 0 {
					t.Fatalf("exit code %d; stderr:\n%s", code, s.p.stderr)
				}
				checkStderr(t, s.p.stderr.String())
				return r.session(t)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.transport, func(t *testing.T) {
			recv, endpoint := startReceiver(t, tt.protocol, "127.0.0.1:0")
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tt.protocol)
			t.Setenv("OTEL_SERVICE_NAME", "wink-e2e")
			handle := tt.drive(t, "00-"+traceID+"-"+parentID+"-01")

			spans := recv.spans()
			common := map[string]string{"network.transport": tt.network, "mcp.protocol.version": tt.version}
			find := func(name string, attrs map[string]string) span {
				t.Helper()
				for _, s := range spans {
					if s.name == name && has(s.attrs, common) && has(s.attrs, attrs) {
						return s
					}
				}
				t.Fatalf("no span %q with %v and %v among %d: %+v", name, common, attrs, len(spans), spans)
				return span{}
			}
			call := find("tools/call planning_setup_plan", map[string]string{
				"mcp.method.name": "tools/call", "gen_ai.tool.name": "planning_setup_plan", "gen_ai.operation.name": "execute_tool",
				"jsonrpc.request.id": "1", "mcp.session.id": session.LogID(handle),
			})
			if call.trace != traceID || call.parent != parentID {
				t.Errorf("the call's span is in trace %s under %s, want %s under %s", call.trace, call.parent, traceID, parentID)
			}
			if _, ok := call.attrs["error.type"]; ok || call.failed {
				t.Errorf("a call that succeeded has error.type %q", call.attrs["error.type"])
			}
			if call.resource["service.name"] != "wink-e2e" {
				t.Errorf("service.name %q, want wink-e2e (OTEL_SERVICE_NAME)", call.resource["service.name"])
			}
			if s := find("tools/call planning_update_step", map[string]string{"error.type": "tool_error"}); !s.failed {
				t.Error("the span of a call answered with an error result is not an error")
			}
			find("tools/call no_such_tool", map[string]string{"error.type": "-32602", "rpc.response.status_code": "-32602"})
			if tt.transport == "stdio" {
				find("resources/read", map[string]string{"mcp.method.name": "resources/read", "mcp.resource.uri": missingCall,
					"error.type": "-32002", "rpc.response.status_code": "-32002"})
			}

			var stages []string
			for _, s := range spans {
				if s.parent == call.id {
					if s.trace != traceID {
						t.Errorf("stage %s is in trace %s", s.name, s.trace)
					}
					stages = append(stages, s.name)
				}
				for k, v := range s.attrs {
					if v == handle {
						t.Errorf("span %s carries the session's handle in %s", s.name, k)
					}
				}
			}
			for _, want := range []string{"concurrency", "validate", "serialise", "policies", "transaction", "handler", "commit"} {
				if !slices.Contains(stages, want) {
					t.Errorf("no %s span under the call's; its children: %v", want, stages)
				}
			}

			want := map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "planning_setup_plan", "network.transport": tt.network}
			if !slices.ContainsFunc(recv.points("mcp.server.operation.duration"), func(a map[string]string) bool { return has(a, want) }) {
				t.Errorf("no mcp.server.operation.duration with %v: %v", want, recv.points("mcp.server.operation.duration"))
			}
			if tt.transport == "stdio" && len(recv.points("mcp.server.session.duration")) == 0 {
				t.Error("no mcp.server.session.duration for the stdio session")
			}
		})
	}
}

// TestTelemetryOff: without the OTLP variables the server connects to no
// collector, not even at the default endpoints, however other OTEL_
// variables are set.
func TestTelemetryOff(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_SERVICE_NAME", "wink-e2e")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	var receivers []*otlpReceiver
	for _, d := range []struct{ protocol, addr string }{{"grpc", "127.0.0.1:4317"}, {"http/protobuf", "127.0.0.1:4318"}} {
		if r, _ := startReceiver(t, d.protocol, d.addr); r != nil {
			receivers = append(receivers, r)
		}
	}
	if len(receivers) == 0 {
		t.Skip("the default OTLP ports are taken")
	}
	p := start(t, "")
	p.initialize()
	p.call(1, "tools/call", map[string]any{"name": "planning_setup_plan", "arguments": map[string]any{"objective": "x", "initial_steps": []string{"a"}}, "_meta": map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
	p.closeStdin()
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, p.stderr)
	}
	for _, r := range receivers {
		if n := r.conns.Load(); n != 0 {
			t.Errorf("%d connections to a default OTLP endpoint", n)
		}
	}
}
