package resource

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Decision is the outcome an audit [Event] records.
type Decision string

// Decisions.
const (
	// DecisionAllow: the request was authenticated and authorized and
	// passed to the wrapped handler.
	DecisionAllow Decision = "allow"
	// DecisionDeny: the request was refused (see Event.Status and
	// Event.Reason).
	DecisionDeny Decision = "deny"
	// DecisionStepUp: a valid token lacked scopes; a 403 insufficient_scope
	// challenge was issued (Event.Required).
	DecisionStepUp Decision = "step_up"
	// DecisionPassthroughBlocked: an outbound request carrying the inbound
	// token was refused by the guard transport.
	DecisionPassthroughBlocked Decision = "passthrough_blocked"
)

// Event is one audit record. It never contains a token or any other
// credential.
type Event struct {
	Time     time.Time
	Decision Decision
	// Status is the HTTP status the middleware sent; 0 when the request
	// was passed to the wrapped handler, and for passthrough events.
	Status int
	// Reason is the fixed description of the failure, such as "token
	// expired"; empty when allowed.
	Reason string
	// Err is the error behind a denial, for errors.Is; nil when allowed.
	Err error
	// HTTPMethod and Path describe the inbound request (for passthrough
	// events, the refused outbound request's host is in Path).
	HTTPMethod string
	Path       string
	RemoteAddr string
	Origin     string
	// MCPMethod and MCPName come from the parsed body, when the policy
	// needed it.
	MCPMethod string
	MCPName   string
	// Issuer, Subject and ClientID come from a verified token.
	Issuer   string
	Subject  string
	ClientID string
	// Scheme is the authorization scheme the request used ("Bearer" or
	// "DPoP"); empty when it had none or several.
	Scheme string
	// DPoP is the DPoP (RFC 9449) outcome: [DPoPValid] when the request's
	// proof was checked and matched the token's binding, the fixed reason
	// when DPoP decided the denial (such as "DPoP proof replayed", "token
	// is bound to another key" or "sender-constrained token presented as
	// bearer"), and empty when DPoP played no part.
	DPoP string
	// JKT is the key thumbprint (cnf.jkt) a verified token is bound to;
	// empty for bearer tokens. It identifies a public key, not a secret.
	JKT string
	// Required lists the scopes the operation needed (step-up events).
	Required []string
	// Actors is the verified token's delegation chain, current actor
	// first (see [TokenInfo.Actors]); nil when it was not delegated.
	Actors []oauthmeta.Actor
}

// DPoPValid is the Event.DPoP value of a request whose DPoP proof was
// valid and bound to its token.
const DPoPValid = "valid"

// outcome is what the middleware learnt about a request, for its
// response and its audit event.
type outcome struct {
	scheme  string
	info    *TokenInfo // the verified token, also on a later denial
	op      *mcpMessage
	proofOK bool       // a DPoP proof was checked and accepted
	steps   *stepTimes // the steps' times, for the spans; nil without tracing
}

func (v *Verifier) emit(r *http.Request, d Decision, status int, err error, o outcome) {
	if v.audit == nil && !v.logger.Enabled(r.Context(), decisionLevel(d)) {
		return // nobody would see the event: do not build it
	}
	e := Event{
		Scheme:     o.scheme,
		Time:       v.clock.Now(),
		Decision:   d,
		Status:     status,
		Err:        err,
		Reason:     description(err),
		HTTPMethod: r.Method,
		Path:       r.URL.Path,
		RemoteAddr: r.RemoteAddr,
		Origin:     r.Header.Get("Origin"),
	}
	if err != nil && e.Reason == "" {
		e.Reason = classReason(err)
	}
	if info := o.info; info != nil {
		e.Issuer, e.Subject, e.ClientID, e.JKT = info.Issuer, info.Subject, info.ClientID, info.JKT
		e.Actors = slices.Clone(info.Actors)
	}
	var rs *Error
	switch {
	case errors.As(err, &rs) && rs.dpop:
		e.DPoP = rs.Reason
	case o.proofOK:
		e.DPoP = DPoPValid
	}
	if op := o.op; op != nil {
		e.MCPMethod, e.MCPName = string(op.method), string(op.name)
	}
	if se := (*ScopeError)(nil); errors.As(err, &se) {
		e.Required = se.Required
	}
	v.record(r.Context(), e)
}

// decisionLevel is the log level of a decision: INFO for an allowed
// request, WARN for the others.
func decisionLevel(d Decision) slog.Level {
	if d == DecisionAllow {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// actorChain renders a chain for the log, current actor first:
// "tool-agent > planner-agent".
func actorChain(actors []oauthmeta.Actor) string {
	var b strings.Builder
	for i, a := range actors {
		if i > 0 {
			b.WriteString(" > ")
		}
		if a.Issuer != "" {
			b.WriteString(a.Issuer + "|")
		}
		b.WriteString(a.Subject)
	}
	return b.String()
}

func classReason(err error) string {
	if c := classOf(err); c != nil {
		return c.msg
	}
	return "error"
}

// record hands e to the audit callback and the logger.
func (v *Verifier) record(ctx context.Context, e Event) {
	if v.audit != nil {
		v.audit(ctx, e)
	}
	level := decisionLevel(e.Decision)
	if v.logger == nil || !v.logger.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("decision", string(e.Decision)),
		slog.Int("status", e.Status),
		slog.String("method", e.HTTPMethod),
		slog.String("path", e.Path),
	}
	for _, a := range []struct{ k, v string }{
		{"reason", e.Reason}, {"remote", e.RemoteAddr}, {"origin", e.Origin},
		{"mcp_method", e.MCPMethod}, {"mcp_name", e.MCPName},
		{"iss", e.Issuer}, {"sub", e.Subject}, {"client_id", e.ClientID},
		{"scheme", e.Scheme}, {"dpop", e.DPoP}, {"jkt", e.JKT},
	} {
		if a.v != "" {
			attrs = append(attrs, slog.String(a.k, a.v))
		}
	}
	if len(e.Required) > 0 {
		attrs = append(attrs, slog.Any("required_scopes", e.Required))
	}
	if len(e.Actors) > 0 {
		attrs = append(attrs, slog.String("act", actorChain(e.Actors)))
	}
	v.logger.LogAttrs(ctx, level, "mcpauth resource decision", attrs...)
}
