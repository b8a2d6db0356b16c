// Package telemetry reports the server's requests to OpenTelemetry, as the
// semantic conventions for MCP say: a span per request, the metrics
// mcp.server.operation.duration and mcp.server.session.duration, and the
// trace context a client sends in a request's _meta (mcp.go). It exports
// them over OTLP when, and only when, the standard environment variables
// say so (New); otherwise it starts nothing and connects nowhere.
//
// It knows nothing of the call pipeline: package server opens the spans of
// its stages under the request's span, with the Tracer it is given.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Options configures New.
type Options struct {
	// Logger receives the errors of the OpenTelemetry SDK and its
	// exporters (which never write to stdout); nil means slog.Default().
	Logger *slog.Logger
	// Version is the service.version of the resource.
	Version string
	// Transport is the network.transport of every request: "pipe" for
	// stdio, "tcp" for HTTP.
	Transport string
}

// ServiceName is the service.name of the resource unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES name another.
const ServiceName = "wink-mcp"

// protocols are the values of OTEL_EXPORTER_OTLP_PROTOCOL the Go exporters
// implement; the first is the default, as the OpenTelemetry specification
// says.
var protocols = []string{"http/protobuf", "grpc"}

// Telemetry reports the server's requests through the providers New set
// up (or With was given).
type Telemetry struct {
	instruments
	shutdown []func(context.Context) error // of the providers New set up
}

// New sets up what the environment asks for: traces when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// or OTEL_TRACES_EXPORTER is otlp, metrics likewise (the _METRICS_ names),
// each over the protocol OTEL_EXPORTER_OTLP[_SIGNAL]_PROTOCOL names
// (http/protobuf by default, or grpc). OTEL_SDK_DISABLED=true and
// OTEL_[SIGNAL]_EXPORTER=none turn them off. The exporters read the rest
// of their settings (headers, timeouts, TLS) from the standard variables,
// the trace provider its sampler (OTEL_TRACES_SAMPLER and _ARG), and the
// resource its service.name from OTEL_SERVICE_NAME (ServiceName by
// default). It returns nil, and starts nothing, when neither signal is
// asked for. Errors of the SDK go to the logger. Call Shutdown before the
// process exits, to send what is still buffered.
func New(ctx context.Context, opts Options) (*Telemetry, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	traces, err := exporterFor("TRACES", os.Getenv)
	if err != nil {
		return nil, err
	}
	metrics, err := exporterFor("METRICS", os.Getenv)
	if err != nil {
		return nil, err
	}
	if traces == "" && metrics == "" {
		return nil, nil
	}
	logger := opts.Logger
	otel.SetLogger(logr.FromSlogHandler(logger.Handler()))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("opentelemetry: exporting failed", "err", err)
	}))
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(ServiceName), semconv.ServiceVersion(opts.Version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("opentelemetry resource: %w", err)
	}
	var shutdown []func(context.Context) error
	stop := func() {
		for _, f := range shutdown {
			_ = f(ctx)
		}
	}
	var tp trace.TracerProvider
	var mp metric.MeterProvider
	if traces != "" {
		exp, err := traceExporter(ctx, traces)
		if err != nil {
			return nil, fmt.Errorf("opentelemetry trace exporter: %w", err)
		}
		sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		tp, shutdown = sdk, append(shutdown, sdk.Shutdown)
	}
	if metrics != "" {
		exp, err := metricExporter(ctx, metrics)
		if err != nil {
			stop()
			return nil, fmt.Errorf("opentelemetry metric exporter: %w", err)
		}
		sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		mp, shutdown = sdk, append(shutdown, sdk.Shutdown)
	}
	t, err := With(tp, mp, opts.Transport)
	if err != nil {
		stop()
		return nil, err
	}
	t.shutdown = shutdown
	return t, nil
}

// With returns a Telemetry that reports through tp and mp, either of which
// may be nil (that signal is not reported), requests that come over
// transport ("pipe" for stdio, "tcp" for HTTP): for a program that sets up
// OpenTelemetry itself. Its Shutdown leaves the providers alone.
func With(tp trace.TracerProvider, mp metric.MeterProvider, transport string) (*Telemetry, error) {
	var tracer trace.Tracer
	var meter metric.Meter
	if tp != nil {
		tracer = tp.Tracer(scope)
	}
	if mp != nil {
		meter = mp.Meter(scope)
	}
	t := &Telemetry{}
	if err := t.init(tracer, meter, transport); err != nil {
		return nil, err
	}
	return t, nil
}

// Shutdown sends what the exporters New set up still hold and stops them,
// within ctx's deadline. It does nothing on a nil Telemetry.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// exporterFor returns the OTLP protocol over which the environment (read
// with getenv) asks for signal ("TRACES" or "METRICS") to be exported, or
// "" when it does not ask for it. A value this server does not implement
// is an error that names the variable.
func exporterFor(signal string, getenv func(string) string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return "", nil
	}
	name := "OTEL_" + signal + "_EXPORTER"
	asked := false
	for e := range strings.SplitSeq(getenv(name), ",") {
		switch e = strings.TrimSpace(e); e {
		case "", "none":
		case "otlp":
			asked = true
		default:
			return "", fmt.Errorf("%s=%s: wink-mcp exports over OTLP only (otlp or none)", name, e)
		}
	}
	if getenv(name) == "" {
		asked = getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
	}
	if !asked {
		return "", nil
	}
	name = "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	p := getenv(name)
	if p == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = getenv(name)
	}
	switch p = strings.TrimSpace(p); p {
	case "":
		return protocols[0], nil
	case protocols[0], protocols[1]:
		return p, nil
	}
	return "", fmt.Errorf("%s=%s: want %s", name, p, strings.Join(protocols, " or "))
}

// traceExporter is the OTLP trace exporter of protocol; it connects when it
// first exports.
func traceExporter(ctx context.Context, protocol string) (sdktrace.SpanExporter, error) {
	if protocol == "grpc" {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

// metricExporter is the OTLP metric exporter of protocol.
func metricExporter(ctx context.Context, protocol string) (sdkmetric.Exporter, error) {
	if protocol == "grpc" {
		return otlpmetricgrpc.New(ctx)
	}
	return otlpmetrichttp.New(ctx)
}
