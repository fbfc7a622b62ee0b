package selfcheck

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// checkDelegated reports how the server treats a token obtained by
// delegation (RFC 8693 §4.1 "act"): accepted (200) or refused by its
// policy (403) are both sound; refused as invalid (401) means sub-agents
// with narrowed tokens cannot use the server at all; anything else is a
// failure. Without Config.DelegatedToken it adds no result. The chain is read from the token without verifying it, only
// to say what was sent.
func (r *runner) checkDelegated(ctx context.Context) {
	const (
		id   = "DG-01"
		name = "delegated token (act claim) handled"
	)
	if r.cfg.DelegatedToken == "" {
		return // no row: the check is asked for by giving the token
	}
	var c struct {
		Act json.RawMessage `json:"act"`
	}
	_ = jwtverify.UnsafeClaimsWithoutVerification(r.cfg.DelegatedToken, &c)
	chain, err := oauthmeta.ParseActor(c.Act)
	if len(c.Act) == 0 || err != nil {
		r.add(id, name, StatusSkip, "the delegated token has no well-formed act claim")
		return
	}
	ex := r.send(ctx, probe{rpc: "tools/list", auth: "Bearer " + r.cfg.DelegatedToken})
	r.observe("delegated token", ex)
	switch {
	case ex.err != nil:
		r.add(id, name, StatusSkip, "%s", r.describe(ex))
	case ex.status == http.StatusOK:
		r.add(id, name, StatusPass, "tools/list answered 200 for the chain %s (depth %d)", r.quote(chain.String()), chain.Depth())
	case ex.status == http.StatusForbidden:
		r.add(id, name, StatusPass, "tools/list refused with 403 for the chain %s: the server's policy limits delegation", r.quote(chain.String()))
	case ex.status == http.StatusUnauthorized:
		r.add(id, name, StatusWarn, "answered 401: the server refuses delegated tokens as invalid, so sub-agents cannot use it")
	default:
		r.add(id, name, StatusFail, "%s; 200, or 403 from a delegation policy, expected", r.describe(ex))
	}
}
