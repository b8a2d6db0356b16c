package telemetry

import (
	"context"
	"strings"
	"testing"
)

// TestExporterFor: a signal is exported when, and only when, the
// environment asks for it, over the protocol it names.
func TestExporterFor(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		signal  string
		want    string
		wantErr string
	}{
		{name: "nothing set", signal: "TRACES", want: ""},
		{name: "a service name alone", env: map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, signal: "TRACES", want: ""},
		{name: "the endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, signal: "TRACES", want: "http/protobuf"},
		{name: "the endpoint, for metrics too", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, signal: "METRICS", want: "http/protobuf"},
		{name: "the traces' endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, signal: "TRACES", want: "http/protobuf"},
		{name: "the traces' endpoint is not the metrics'", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, signal: "METRICS", want: ""},
		{name: "otlp named", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, signal: "TRACES", want: "http/protobuf"},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, signal: "TRACES", want: "grpc"},
		{name: "the signal's protocol first", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf"}, signal: "METRICS", want: "http/protobuf"},
		{name: "none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none"}, signal: "TRACES", want: ""},
		{name: "none for the other signal", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none"}, signal: "METRICS", want: "http/protobuf"},
		{name: "disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "TRUE"}, signal: "TRACES", want: ""},
		{name: "an exporter of another kind", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, signal: "TRACES", wantErr: "OTEL_TRACES_EXPORTER=zipkin"},
		{name: "a protocol the exporters lack", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, signal: "TRACES", wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := exporterFor(tt.signal, func(k string) string { return tt.env[k] })
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want one naming %s", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case got != tt.want:
				t.Errorf("protocol %q, want %q", got, tt.want)
			}
		})
	}
}

// TestNewWithoutEnvironment: with no variable set, New starts nothing.
func TestNewWithoutEnvironment(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER"} {
		t.Setenv(k, "")
	}
	tel, err := New(context.Background(), Options{Transport: "pipe"})
	if err != nil || tel != nil {
		t.Fatalf("New = %v, %v; want nil, nil", tel, err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown of a nil Telemetry: %v", err)
	}
}
