package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/mark3labs/mcp-go/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// scope is the instrumentation scope of the spans and metrics.
const scope = "github.com/wink-mcp/wink-mcp"

// ToolError is the error.type of a tools/call answered with a result whose
// isError is set.
const ToolError = "tool_error"

// operationBuckets are the bucket boundaries, in seconds, the conventions
// give mcp.server.operation.duration.
var operationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// instruments are what requests are reported through.
type instruments struct {
	tracer     trace.Tracer // never nil: a no-op one when traces are not exported
	traced     bool         // traces are exported
	operations mcpconv.ServerOperationDuration
	sessions   mcpconv.ServerSessionDuration
	transport  mcpconv.NetworkTransportAttr
	propagator propagation.TextMapPropagator
	started    sync.Map // session ID → time.Time its MCP session started
}

// init sets in up to report through tracer and meter, either of which may
// be nil (that signal is not exported), requests that come over transport.
func (in *instruments) init(tracer trace.Tracer, meter metric.Meter, transport string) error {
	in.tracer, in.traced = tracer, tracer != nil
	if tracer == nil {
		in.tracer = tracenoop.NewTracerProvider().Tracer(scope)
	}
	in.transport = mcpconv.NetworkTransportAttr(transport)
	in.propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	var err error
	// A nil meter gives no-op instruments.
	if in.operations, err = mcpconv.NewServerOperationDuration(meter, metric.WithExplicitBucketBoundaries(operationBuckets...)); err != nil {
		return err
	}
	in.sessions, err = mcpconv.NewServerSessionDuration(meter)
	return err
}

// Tracer returns the tracer of the spans of a request's stages, or nil when
// traces are not exported.
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil || !t.traced {
		return nil
	}
	return t.tracer
}

// Instrument adds to hooks, the hooks of the mcp-go server being built, what
// describes each request, and returns the options that give that server
// its span (WithTracer) and the trace context of its _meta
// (WithMetaPropagator).
//
// mcp-go's HandleMessage is the one place every request passes through, on
// every transport (its own Streamable HTTP handler of the 2026-07-28 era
// included), and its tracer is the one way into the context the handlers
// run in. The names and attributes mcp-go gives its spans are not those of
// the conventions: the span Start returns is a request, which takes its
// name and attributes from the hooks (the tool, prompt or resource, the
// request's id, the JSON-RPC error code), not from mcp-go, and mcp-go's
// spans around tool handlers are dropped, the server's stage spans saying
// more.
func (t *Telemetry) Instrument(hooks *mcpserver.Hooks) []mcpserver.ServerOption {
	hooks.AddOnSuccess(func(ctx context.Context, id any, _ mcp.MCPMethod, message, result any) {
		if r := from(ctx); r != nil {
			r.describe(id, message)
			switch res := result.(type) {
			case *mcp.CallToolResult:
				if res.IsError {
					r.errType = ToolError
				}
			case *mcp.InitializeResult:
				r.protocol = res.ProtocolVersion
			}
		}
	})
	hooks.AddOnError(func(ctx context.Context, id any, _ mcp.MCPMethod, message any, err error) {
		if r := from(ctx); r != nil {
			r.describe(id, message)
			if e, ok := err.(interface{ ToJSONRPCError() mcp.JSONRPCError }); ok && r.errType == "" {
				r.errType = strconv.Itoa(e.ToJSONRPCError().Error.Code)
			}
		}
	})
	hooks.AddOnRegisterSession(func(_ context.Context, cs mcpserver.ClientSession) {
		t.started.Store(cs.SessionID(), time.Now())
	})
	hooks.AddOnUnregisterSession(func(ctx context.Context, cs mcpserver.ClientSession) {
		v, ok := t.started.LoadAndDelete(cs.SessionID())
		if !ok {
			return
		}
		attrs := t.network()
		if p := protocolOf(cs); p != "" {
			attrs = append(attrs, t.sessions.AttrProtocolVersion(p))
		}
		t.sessions.Record(context.WithoutCancel(ctx), time.Since(v.(time.Time)).Seconds(), attrs...)
	})
	return []mcpserver.ServerOption{
		mcpserver.WithTracer(requestTracer{t}),
		mcpserver.WithMetaPropagator(metaPropagator{t.propagator}),
	}
}

// network returns the attributes of the transport every request comes
// over.
func (t *Telemetry) network() []attribute.KeyValue {
	attrs := []attribute.KeyValue{t.operations.AttrNetworkTransport(t.transport)}
	if t.transport == mcpconv.NetworkTransportTCP {
		attrs = append(attrs, t.operations.AttrNetworkProtocolName("http"))
	}
	return attrs
}

// protocolOf is the protocol version cs negotiated, if it says.
func protocolOf(cs mcpserver.ClientSession) string {
	if v, ok := cs.(mcpserver.SessionWithProtocolVersion); ok {
		return v.ProtocolVersion()
	}
	return ""
}

// SetSession records on the request ctx belongs to, if it is traced, the
// identifier of its session (session.LogID: never the handle itself) as
// mcp.session.id.
func SetSession(ctx context.Context, id string) {
	if span := trace.SpanFromContext(ctx); id != "" && span.IsRecording() {
		span.SetAttributes(semconv.McpSessionID(id))
	}
}

// SetErrorCode records that the request ctx belongs to is answered with the
// JSON-RPC error code, whatever mcp-go reports (the server answers some
// errors with another code than mcp-go's). It is called from the
// request's own goroutine.
func SetErrorCode(ctx context.Context, code int) {
	if r := from(ctx); r != nil {
		r.errType = strconv.Itoa(code)
	}
}

// Request reports a request that mcp-go does not dispatch (the task
// methods, which the server answers itself): it starts the request's span,
// named method, with the request's id and protocol version, in the trace
// that meta continues; end ends it with the JSON-RPC error code of the
// answer, or 0 for a result. A nil Telemetry reports nothing.
func (t *Telemetry) Request(ctx context.Context, method string, id any, protocol string, meta *mcp.Meta) (_ context.Context, end func(code int)) {
	if t == nil {
		return ctx, func(int) {}
	}
	ctx = metaPropagator{t.propagator}.ExtractMeta(ctx, meta)
	r := &request{t: t, start: time.Now(), method: method, protocol: protocol}
	r.describe(id, nil)
	ctx, r.span = t.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(r.start))
	return context.WithValue(ctx, requestKey{}, r), func(code int) {
		if code != 0 {
			r.errType = strconv.Itoa(code)
		}
		r.End()
	}
}

// requestKey is the context key of a request.
type requestKey struct{}

// from returns the request ctx belongs to, or nil.
func from(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r
}

// requestTracer is the mcp-go tracer that starts a request.
type requestTracer struct{ t *Telemetry }

// Start starts a request for a server span of mcp-go (named "mcp." and the
// method), and drops mcp-go's other spans.
func (rt requestTracer) Start(ctx context.Context, name string, kind tracing.SpanKind, _ ...tracing.Attribute) (context.Context, tracing.Span) {
	if kind != tracing.SpanKindServer {
		return tracing.NoopTracer().Start(ctx, name, kind)
	}
	r := &request{t: rt.t, start: time.Now(), method: strings.TrimPrefix(name, "mcp."), protocol: mcpserver.RequestProtocolVersion(ctx)}
	ctx, r.span = rt.t.tracer.Start(ctx, r.method, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(r.start))
	return context.WithValue(ctx, requestKey{}, r), r
}

// request is one request being answered: the span mcp-go ends, and what
// the hooks say of it until then. Its fields are written from the
// request's goroutine only.
type request struct {
	t        *Telemetry
	span     trace.Span
	start    time.Time
	method   string
	id       string // jsonrpc.request.id
	tool     string
	prompt   string
	uri      string
	protocol string
	errType  string // "" when the request succeeded
	errMsg   string
}

// describe takes what the conventions report of a request from its id and
// its decoded message.
func (r *request) describe(id any, message any) {
	switch v := id.(type) {
	case string:
		r.id = v
	case float64:
		r.id = strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
	default:
		r.id = fmt.Sprint(v)
	}
	switch m := message.(type) {
	case *mcp.CallToolRequest:
		r.tool = m.Params.Name
	case *mcp.GetPromptRequest:
		r.prompt = m.Params.Name
	case *mcp.ReadResourceRequest:
		r.uri = m.Params.URI
	case *mcp.SubscribeRequest:
		r.uri = m.Params.URI
	case *mcp.UnsubscribeRequest:
		r.uri = m.Params.URI
	}
}

// SetAttributes ignores mcp-go's attributes: the request takes its own.
func (r *request) SetAttributes(...tracing.Attribute) {}

// RecordError ignores mcp-go's errors: the hooks give the JSON-RPC code.
func (r *request) RecordError(error) {}

// SetStatus keeps the message of the JSON-RPC error the request is
// answered with. A request answered with an error no hook reported (a
// method mcp-go does not know) gets the error.type "_OTHER".
func (r *request) SetStatus(code tracing.StatusCode, description string) {
	if code != tracing.StatusError {
		return
	}
	r.errMsg = description
	if r.errType == "" {
		r.errType = string(mcpconv.ErrorTypeOther)
	}
}

// End records the request's duration and ends its span, named and
// described as the conventions say.
func (r *request) End() {
	end := time.Now()
	ops := r.t.operations
	attrs := r.t.network()
	if r.protocol != "" {
		attrs = append(attrs, ops.AttrProtocolVersion(r.protocol))
	}
	target := ""
	switch {
	case r.tool != "":
		target = r.tool
		attrs = append(attrs, ops.AttrGenAIToolName(r.tool), ops.AttrGenAIOperationName(mcpconv.GenAIOperationNameExecuteTool))
	case r.prompt != "":
		target = r.prompt
		attrs = append(attrs, ops.AttrGenAIPromptName(r.prompt))
	}
	if r.errType != "" {
		attrs = append(attrs, ops.AttrErrorType(mcpconv.ErrorTypeAttr(r.errType)))
		if r.errType != ToolError && r.errType != string(mcpconv.ErrorTypeOther) {
			attrs = append(attrs, ops.AttrRPCResponseStatusCode(r.errType))
		}
	}
	ops.Record(context.Background(), end.Sub(r.start).Seconds(), mcpconv.MethodNameAttr(r.method), attrs...)
	if !r.span.IsRecording() {
		return
	}
	if target != "" {
		r.span.SetName(r.method + " " + target)
	}
	attrs = append(attrs, semconv.McpMethodNameKey.String(r.method))
	if r.id != "" {
		attrs = append(attrs, semconv.JSONRPCRequestID(r.id))
	}
	if r.uri != "" {
		attrs = append(attrs, semconv.McpResourceURI(r.uri))
	}
	r.span.SetAttributes(attrs...)
	if r.errType != "" {
		r.span.SetStatus(codes.Error, r.errMsg)
	}
	r.span.End(trace.WithTimestamp(end))
}

// metaPropagator reads the trace context of a request from its _meta
// (traceparent, tracestate and baggage, unprefixed, as SEP-414 and the
// conventions say), so that the client's trace continues into the server.
type metaPropagator struct{ p propagation.TextMapPropagator }

// ExtractMeta returns ctx with the trace context of meta.
func (m metaPropagator) ExtractMeta(ctx context.Context, meta *mcp.Meta) context.Context {
	if meta == nil || len(meta.AdditionalFields) == 0 {
		return ctx
	}
	return m.p.Extract(ctx, metaCarrier(meta.AdditionalFields))
}

// InjectMeta returns meta unchanged: the server sends no requests that
// continue a trace.
func (metaPropagator) InjectMeta(_ context.Context, meta *mcp.Meta) *mcp.Meta { return meta }

// metaCarrier is a _meta object as a carrier of the trace context.
type metaCarrier map[string]any

func (c metaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c metaCarrier) Set(key, value string) { c[key] = value }

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
