package selfcheck

import (
	"context"
	"net/http"
	"strings"

	"github.com/mcpauth/mcpauth/internal/ascii"
)

// checkOrigin: a disallowed Origin gets 403 (TR-01), before authentication
// (TR-11). Without a token a 401 only shows that authentication ran first;
// with a token the request is repeated to see whether Origin is checked at
// all.
func (r *runner) checkOrigin(ctx context.Context) {
	const (
		nameOrder  = "Origin checked before authentication"
		nameOrigin = "disallowed Origin gets 403"
	)
	ex := r.send(ctx, probe{rpc: "tools/list", origin: r.cfg.Origin})
	switch {
	case ex.err != nil:
		r.add("TR-11", nameOrder, StatusSkip, "%s", r.describe(ex))
		r.add("TR-01", nameOrigin, StatusSkip, "%s", r.describe(ex))
		return
	case ex.status == http.StatusForbidden:
		r.add("TR-11", nameOrder, StatusPass, "")
		r.add("TR-01", nameOrigin, StatusPass, "Origin: %s without a token answered 403", r.cfg.Origin)
		return
	case ex.is2xx():
		r.add("TR-11", nameOrder, StatusSkip, "no refusal to order")
		r.add("TR-01", nameOrigin, StatusFail, "Origin: %s answered %d", r.cfg.Origin, ex.status)
		return
	case ex.status == http.StatusUnauthorized:
		r.add("TR-11", nameOrder, StatusWarn, "Origin: %s without a token answered 401: authentication runs before the Origin check, or Origin is not checked", r.cfg.Origin)
	default:
		r.add("TR-11", nameOrder, StatusSkip, "Origin: %s without a token answered %d", r.cfg.Origin, ex.status)
	}
	if r.cfg.Token == "" {
		r.add("TR-01", nameOrigin, StatusWarn, "Origin: %s answered %d, not 403; give a token to tell whether Origin is checked at all", r.cfg.Origin, ex.status)
		return
	}
	ex = r.send(ctx, probe{rpc: "tools/list", origin: r.cfg.Origin, auth: "Bearer " + r.cfg.Token})
	switch {
	case ex.err != nil:
		r.add("TR-01", nameOrigin, StatusSkip, "%s", r.describe(ex))
	case ex.status == http.StatusForbidden:
		r.add("TR-01", nameOrigin, StatusPass, "Origin: %s with a valid token answered 403", r.cfg.Origin)
	case ex.status >= 400 && ex.status < 500:
		r.add("TR-01", nameOrigin, StatusWarn, "Origin: %s with a valid token answered %d, not 403", r.cfg.Origin, ex.status)
	default:
		r.add("TR-01", nameOrigin, StatusFail, "Origin: %s with a valid token answered %d: the Origin is not validated (DNS rebinding)", r.cfg.Origin, ex.status)
	}
}

// checkCORS: a CORS preflight is never challenged, and a 401 to an allowed
// Origin exposes WWW-Authenticate to browser clients (RS-26).
func (r *runner) checkCORS(ctx context.Context) {
	const (
		namePreflight = "OPTIONS preflight not challenged"
		nameExpose    = "WWW-Authenticate exposed to browsers"
	)
	origin := r.cfg.allowedOrigin
	ex := r.send(ctx, probe{method: http.MethodOptions, origin: origin, header: http.Header{
		"Access-Control-Request-Method":  {http.MethodPost},
		"Access-Control-Request-Headers": {"authorization, content-type, mcp-method, mcp-name, mcp-protocol-version"},
	}})
	switch {
	case ex.err != nil:
		r.add("RS-26", namePreflight, StatusSkip, "%s", r.describe(ex))
	case ex.status == http.StatusUnauthorized:
		r.add("RS-26", namePreflight, StatusWarn, "OPTIONS answered 401; browsers never send credentials on a preflight")
	default:
		r.add("RS-26", namePreflight, StatusPass, "OPTIONS answered %d", ex.status)
	}
	ex = r.send(ctx, probe{rpc: "tools/list", origin: origin})
	switch {
	case ex.err != nil:
		r.add("RS-26", nameExpose, StatusSkip, "%s", r.describe(ex))
	case ex.status != http.StatusUnauthorized:
		r.add("RS-26", nameExpose, StatusSkip, "Origin: %s without a token answered %d, not 401", origin, ex.status)
	case exposes(ex.header, "WWW-Authenticate"):
		r.add("RS-26", nameExpose, StatusPass, "")
	default:
		r.add("RS-26", nameExpose, StatusWarn, "Access-Control-Expose-Headers on the 401 does not list WWW-Authenticate; browser clients cannot read the challenge")
	}
}

// exposes reports whether Access-Control-Expose-Headers lists name (or *).
func exposes(h http.Header, name string) bool {
	for _, v := range h.Values("Access-Control-Expose-Headers") {
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			if f == "*" || ascii.EqualFold(f, name) {
				return true
			}
		}
	}
	return false
}
