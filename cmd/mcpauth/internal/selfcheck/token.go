package selfcheck

import (
	"context"
	"net/http"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

const needToken = "needs a valid token"

// checkValidToken: a request with the valid token succeeds, and the same
// request right after without it is refused: every request is authenticated
// on its own (RS-20).
func (r *runner) checkValidToken(ctx context.Context) {
	const (
		nameValid = "valid token accepted"
		nameEach  = "next request without token gets 401"
	)
	if r.cfg.Token == "" {
		r.add("RS-20", nameValid, StatusSkip, needToken)
		r.add("RS-20", nameEach, StatusSkip, needToken)
		return
	}
	ex := r.send(ctx, probe{rpc: "tools/list", auth: "Bearer " + r.cfg.Token})
	r.observe("valid token", ex)
	switch {
	case ex.err != nil || ex.status != http.StatusOK:
		r.add("RS-20", nameValid, StatusFail, "POST tools/list with the token: %s", r.describe(ex))
	default:
		if ok, what := r.rpcOutcome(ex); ok {
			r.add("RS-20", nameValid, StatusPass, "tools/list answered 200 with a %s", what)
		} else {
			r.add("RS-20", nameValid, StatusWarn, "authorized (200), but %s", what)
		}
	}
	ex = r.send(ctx, probe{rpc: "tools/list"})
	r.observe("no token after a valid one", ex)
	switch {
	case ex.err != nil:
		r.add("RS-20", nameEach, StatusSkip, "%s", r.describe(ex))
	case ex.status == http.StatusUnauthorized:
		r.add("RS-20", nameEach, StatusPass, "")
	case ex.is2xx():
		r.add("RS-20", nameEach, StatusFail, "answered %d: an earlier request's authentication was reused", ex.status)
	default:
		r.add("RS-20", nameEach, StatusFail, "%s; 401 expected", r.describe(ex))
	}
}

// checkGet: a 2026-07-28 server has no GET stream, so GET with a valid
// token gets 405 (TR-03). The body is not read.
func (r *runner) checkGet(ctx context.Context) {
	const name = "GET answered 405"
	if r.cfg.Token == "" {
		r.add("TR-03", name, StatusSkip, needToken)
		return
	}
	ex := r.send(ctx, probe{method: http.MethodGet, auth: "Bearer " + r.cfg.Token, noBody: true,
		header: http.Header{"Accept": {"text/event-stream"}, "Mcp-Protocol-Version": {protocolVersion}}})
	switch {
	case ex.err != nil:
		r.add("TR-03", name, StatusSkip, "%s", r.describe(ex))
	case ex.status == http.StatusMethodNotAllowed:
		r.add("TR-03", name, StatusPass, "")
	default:
		r.add("TR-03", name, StatusWarn, "GET with a valid token answered %d; a 2026-07-28 server answers 405", ex.status)
	}
}

// checkStepUp: calling a tool the token lacks scope for gets 403
// insufficient_scope with the scopes needed (RS-12) and resource_metadata
// (counted for RS-25).
func (r *runner) checkStepUp(ctx context.Context) {
	const name = "insufficient scope gets 403 insufficient_scope with scope="
	switch {
	case r.cfg.Token == "":
		r.add("RS-12", name, StatusSkip, needToken)
		return
	case r.cfg.StepUpTool == "":
		r.add("RS-12", name, StatusSkip, "needs a tool the token lacks scope for")
		return
	}
	ex := r.send(ctx, probe{rpc: "tools/call", tool: r.cfg.StepUpTool, auth: "Bearer " + r.cfg.Token})
	r.observe("tools/call "+r.quote(r.cfg.StepUpTool), ex)
	ch, found, _ := bearer(ex)
	scope, hasScope := ch.Get(oauthmeta.ParamScope)
	scopes, scopeErr := oauthmeta.ParseScope(scope)
	switch {
	case ex.is2xx():
		r.add("RS-12", name, StatusFail, "tools/call %s answered %d: the call was not refused (does the token lack the scope?)", r.quote(r.cfg.StepUpTool), ex.status)
	case ex.status != http.StatusForbidden || !found || ch.Value(oauthmeta.ParamError) != string(oauthmeta.CodeInsufficientScope):
		r.add("RS-12", name, StatusFail, "tools/call %s: %s; 403 with error=\"insufficient_scope\" expected", r.quote(r.cfg.StepUpTool), r.describe(ex))
	case !hasScope:
		r.add("RS-12", name, StatusWarn, "403 insufficient_scope without scope=; clients cannot tell which scope to ask for")
	case scopeErr != nil || len(scopes) == 0:
		r.add("RS-12", name, StatusFail, "403 insufficient_scope with scope=%s, not an RFC 6749 §3.3 scope list", r.quote(scope))
	default:
		r.add("RS-12", name, StatusPass, "scope=%s", r.quote(scope))
	}
}

// checkPassthrough reports RS-19 as unverifiable from outside.
func (r *runner) checkPassthrough(context.Context) {
	r.add("RS-19", "inbound token not passed to upstream APIs", StatusSkip,
		"cannot be observed from outside; review the server, or use the resource package's outbound guard")
}
