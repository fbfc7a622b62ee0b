package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// tracingEnabled reports whether the standard OpenTelemetry environment
// asks for traces: an OTLP endpoint is named (OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is
// "otlp", and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none
// turns them off. Off by default.
func tracingEnabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: only otlp (OTLP over HTTP) and none are supported", exp)
	}
	if p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		if p != "" && p != "http/protobuf" {
			return false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: only http/protobuf is supported", p)
		}
	} else if p != "http/protobuf" {
		return false, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%q: only http/protobuf is supported", p)
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
}

// startTracing returns the tracer provider of a command, exporting spans
// over OTLP/HTTP as the OTEL_* environment variables configure it
// (endpoint, headers, timeout, sampler, batch sizes, service name and
// resource attributes), and the function that flushes and stops it; a nil
// provider when tracing is off. It starts the exporter's batching
// goroutine, stopped by the returned function.
func startTracing(ctx context.Context, service string, logger *slog.Logger) (trace.TracerProvider, func(), error) {
	on, err := tracingEnabled(os.Getenv)
	if err != nil || !on {
		return nil, func() {}, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OpenTelemetry exporter: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read last, win.
	res, err := sdkresource.New(ctx, sdkresource.WithTelemetrySDK(),
		sdkresource.WithAttributes(attribute.String("service.name", service)), sdkresource.WithFromEnv())
	if err != nil && !errors.Is(err, sdkresource.ErrPartialResource) {
		return nil, nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	logger.Info("exporting traces over OTLP/HTTP", "service", service)
	return tp, func() {
		// A context of its own: the command's is cancelled at shutdown,
		// when the last spans still have to be sent.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			logger.Warn("flushing traces failed", "err", err)
		}
	}, nil
}
