package main

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracedTransport records a client span for each request to the upstream
// MCP server, a child of the middleware's request span, and passes the
// trace on in the traceparent and tracestate headers (W3C Trace Context),
// replacing those the client sent. The JSON-RPC body, and so its
// params._meta, reaches the upstream unchanged.
type tracedTransport struct {
	base   http.RoundTripper
	tracer trace.Tracer
}

func newTracedTransport(base http.RoundTripper, tp trace.TracerProvider) *tracedTransport {
	return &tracedTransport{base: base, tracer: tp.Tracer("github.com/mcpauth/mcpauth/cmd/mcpauth")}
}

func (t *tracedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, span := t.tracer.Start(r.Context(), "mcpauth.protect.upstream", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("server.address", r.URL.Host)))
	defer span.End()
	// A RoundTripper must not change the request it is given: the trace
	// headers go on a copy.
	out := r.Clone(ctx)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(out.Header))
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		span.SetStatus(codes.Error, "upstream request failed")
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode))
	}
	return resp, nil
}
