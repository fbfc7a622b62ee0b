package resource

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the middleware's spans.
const tracerName = "github.com/mcpauth/mcpauth/resource"

// Span names. The request span is the parent of the others.
const (
	spanRequest = "mcpauth.resource.request"
	spanVerify  = "mcpauth.resource.verify"
	spanDPoP    = "mcpauth.resource.dpop"
	spanPolicy  = "mcpauth.resource.policy"
)

// stepTimes are the start and end of the steps of one request, for the
// spans, which are recorded once the decision is known: their parent may
// be the trace context of the JSON-RPC body's _meta, which the middleware
// reads only after the token is verified.
type stepTimes struct {
	start                time.Time
	verify, dpop, policy [2]time.Time // zero: the step did not run
	traceparent          string       // params._meta.traceparent, when the body was read
	tracestate           string
}

// parent returns the context the request span is a child of: the W3C
// trace context of the JSON-RPC body's params._meta (SEP-414) when it
// holds a valid traceparent, else that of the traceparent and tracestate
// headers, else none.
func (st *stepTimes) parent(ctx context.Context, h http.Header) context.Context {
	tc := propagation.TraceContext{}
	if st.traceparent != "" {
		c := tc.Extract(ctx, propagation.MapCarrier{"traceparent": st.traceparent, "tracestate": st.tracestate})
		if trace.SpanContextFromContext(c).IsValid() {
			return c
		}
	}
	return tc.Extract(ctx, propagation.HeaderCarrier(h))
}

// traceRequest records the spans of a decided request and returns the
// context the wrapped handler gets (with the request span) and the
// function that ends that span, called when the handler returns. Nothing
// recorded holds a token, proof, secret or the subject: the decision, the
// fixed reason, the status, the scheme, DPoP's outcome, the issuer and
// client_id, and the MCP method and tool.
func (v *Verifier) traceRequest(r *http.Request, st *stepTimes, d Decision, status int, err error, o *outcome) (context.Context, func()) {
	ctx, span := v.tracer.Start(st.parent(r.Context(), r.Header), spanRequest,
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(st.start))
	attrs := []attribute.KeyValue{attribute.String("mcpauth.decision", string(d))}
	if status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", status))
	}
	reason := ""
	if err != nil {
		if reason = description(err); reason == "" {
			reason = classReason(err)
		}
		attrs = append(attrs, attribute.String("mcpauth.reason", reason))
	}
	if o.scheme != "" {
		attrs = append(attrs, attribute.String("mcpauth.scheme", o.scheme))
	}
	if info := o.info; info != nil {
		attrs = append(attrs, attribute.String("mcpauth.issuer", info.Issuer))
		if info.ClientID != "" {
			attrs = append(attrs, attribute.String("oauth.client_id", info.ClientID))
		}
	}
	if op := o.op; op != nil && op.hasMethod {
		attrs = append(attrs, attribute.String("mcp.method.name", string(op.method)))
		if string(op.method) == "tools/call" && op.hasName {
			attrs = append(attrs, attribute.String("gen_ai.tool.name", string(op.name)))
		}
	}
	span.SetAttributes(attrs...)
	if d != DecisionAllow {
		span.SetStatus(codes.Error, reason)
	}
	last := lastStep(st)
	for _, step := range []struct {
		name string
		t    [2]time.Time
	}{{spanVerify, st.verify}, {spanDPoP, st.dpop}, {spanPolicy, st.policy}} {
		v.stepSpan(ctx, step.name, step.t, err != nil && step.t == last, reason)
	}
	if d != DecisionAllow {
		span.End(trace.WithTimestamp(v.clock.Now()))
		return ctx, func() {}
	}
	return ctx, func() { span.End(trace.WithTimestamp(v.clock.Now())) }
}

// stepSpan records the span of one step that ran from t[0] to t[1];
// failed says the request was refused there, for reason.
func (v *Verifier) stepSpan(ctx context.Context, name string, t [2]time.Time, failed bool, reason string) {
	if t[0].IsZero() {
		return
	}
	_, span := v.tracer.Start(ctx, name, trace.WithTimestamp(t[0]))
	outcome := "ok"
	if failed {
		outcome = reason
		span.SetStatus(codes.Error, reason)
	}
	span.SetAttributes(attribute.String("mcpauth.outcome", outcome))
	span.End(trace.WithTimestamp(t[1]))
}

// lastStep is the last step that ran: the one a refusal came from.
func lastStep(st *stepTimes) [2]time.Time {
	for _, t := range [][2]time.Time{st.policy, st.dpop, st.verify} {
		if !t[0].IsZero() {
			return t
		}
	}
	return [2]time.Time{}
}

// traceBody reads r's body (its length known and within MaxBodyBytes) for
// the trace context of its params._meta, when only tracing needs it: a
// body that is no usable JSON-RPC message is passed on as it is, as
// without tracing. It returns the body for the handler's copy of the
// request, and the scanned message when the body was one.
func (v *Verifier) traceBody(r *http.Request, st *stepTimes) ([]byte, *mcpMessage) {
	body, err := readBody(r, v.maxBody)
	if err != nil {
		return body, nil
	}
	msg := new(mcpMessage)
	if msg.scan(body) != nil {
		return body, nil
	}
	st.traceparent, st.tracestate = string(msg.traceparent), string(msg.tracestate)
	return body, msg
}
