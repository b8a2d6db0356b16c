package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/wink-mcp/wink-mcp/config"
	"github.com/wink-mcp/wink-mcp/telemetry"
)

// telemetryFlushTimeout bounds the sending, at exit, of the spans and
// metrics still buffered.
const telemetryFlushTimeout = 5 * time.Second

// startTelemetry sets up OpenTelemetry as the OTEL_ environment variables
// ask (see package telemetry): nil when they ask for nothing. A setting it
// cannot follow is logged, and the server runs without it: telemetry never
// keeps the server from serving.
func startTelemetry(cfg *config.Config, logger *slog.Logger) *telemetry.Telemetry {
	transport := "pipe"
	if cfg.HTTP.Addr != "" {
		transport = "tcp"
	}
	t, err := telemetry.New(context.Background(), telemetry.Options{Logger: logger, Version: moduleVersion(), Transport: transport})
	if err != nil {
		logger.Warn("OpenTelemetry is off", "err", err)
		return nil
	}
	return t
}

// stopTelemetry sends what t still holds, within telemetryFlushTimeout.
func stopTelemetry(t *telemetry.Telemetry, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		logger.Warn("sending the last spans and metrics failed", "err", err)
	}
}
