package authserver

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// tracerName is the instrumentation scope of the server's spans.
const tracerName = "github.com/mcpauth/mcpauth/authserver"

// Observer receives one [Event] per request at the token, introspection,
// revocation and registration endpoints and the upstream login callback,
// for metrics ([Config.Observer]). It is called on the request's
// goroutine, after the answer was written, and must not block.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc is an [Observer] that is a function.
type ObserverFunc func(context.Context, Event)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// Endpoints an [Event] names.
const (
	EndpointToken            = "token"
	EndpointIntrospection    = "introspection"
	EndpointRevocation       = "revocation"
	EndpointRegistration     = "registration"
	EndpointUpstreamCallback = "upstream_callback"
)

// OutcomeOK is the Event.Outcome of a request that succeeded, and
// OutcomeRateLimited that of one refused by [RateLimit].
const (
	OutcomeOK          = "ok"
	OutcomeRateLimited = "rate_limited"
)

// Event is what the server did with one request. Every field holds a
// fixed value, never request data, a token, code or secret: they may be
// metric labels.
type Event struct {
	// Endpoint is one of the Endpoint constants.
	Endpoint string
	// GrantType is the token request's grant_type when the server offers
	// it; "" for other endpoints and for an unsupported or missing one.
	GrantType string
	// Outcome is [OutcomeOK], [OutcomeRateLimited], or the RFC 6749 error
	// code of the refusal ("invalid_grant", "access_denied", ...).
	Outcome string
	// Internal says the request failed on the server's side (its storage
	// or another internal error, logged) rather than on its input.
	Internal bool
	// Status is the HTTP status of the answer.
	Status int
	// Duration is the time the server took to answer.
	Duration time.Duration
}

// requestNote collects, while a request is served, what its Event and
// span report.
type requestNote struct {
	grantType string
	code      oauthmeta.ErrorCode
	internal  bool
}

type noteKey struct{}

// noteRefusal records the error code a request was refused with.
func noteRefusal(ctx context.Context, code oauthmeta.ErrorCode, internal bool) {
	if n, ok := ctx.Value(noteKey{}).(*requestNote); ok {
		n.code, n.internal = code, n.internal || internal
	}
}

// noteGrantType records the grant type of a token request.
func noteGrantType(ctx context.Context, gt string) {
	if n, ok := ctx.Value(noteKey{}).(*requestNote); ok {
		n.grantType = gt
	}
}

// statusRecorder keeps the status of an answer.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// observed wraps the handler of endpoint with its span and its [Event].
// Without Config.Observer and Config.TracerProvider it is h itself: no
// cost at all.
func (s *Server) observed(endpoint string, h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.Observer == nil && s.tracer == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		start := s.clock.Now()
		note := &requestNote{}
		ctx := context.WithValue(r.Context(), noteKey{}, note)
		var span trace.Span
		if s.tracer != nil {
			ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = s.tracer.Start(ctx, "mcpauth.authserver."+endpoint, trace.WithSpanKind(trace.SpanKindServer))
		}
		sw := &statusRecorder{ResponseWriter: w}
		h(sw, r.WithContext(ctx))
		e := Event{Endpoint: endpoint, GrantType: note.grantType, Outcome: string(note.code), Internal: note.internal,
			Status: sw.status, Duration: s.clock.Now().Sub(start)}
		switch {
		case e.Status == http.StatusTooManyRequests:
			e.Outcome = OutcomeRateLimited
		case e.Outcome == "" && e.Status < 400:
			e.Outcome = OutcomeOK
		case e.Outcome == "":
			e.Outcome = string(oauthmeta.CodeServerError)
		}
		if span != nil {
			attrs := []attribute.KeyValue{attribute.String("mcpauth.outcome", e.Outcome),
				attribute.Int("http.response.status_code", e.Status)}
			if e.GrantType != "" {
				attrs = append(attrs, attribute.String("oauth.grant_type", e.GrantType))
			}
			if e.Internal {
				attrs = append(attrs, attribute.Bool("mcpauth.internal_error", true))
			}
			span.SetAttributes(attrs...)
			if e.Outcome != OutcomeOK {
				span.SetStatus(codes.Error, e.Outcome)
			}
			span.End()
		}
		if s.cfg.Observer != nil {
			s.cfg.Observer.Observe(ctx, e)
		}
	}
}
