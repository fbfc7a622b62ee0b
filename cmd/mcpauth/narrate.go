package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// narrator tells, in plain words, what happens on the wire during the demo:
// it is fed by observe (both servers), observingTransport (the MCP client's
// requests) and narratingAuthorizer (the authorization round trip). It never
// prints a token, code, verifier or state. Safe for concurrent use.
type narrator struct {
	mu     sync.Mutex
	w      io.Writer
	now    func() time.Time
	step   int
	stack  *demoStack // set once the servers exist
	asMeta oauthmeta.AuthServerMetadata
	tokens map[[32]byte]bool
	// counts for the summary
	mcpCalls, authorizations, tokensIssued int
	lastGrant                              string // grant_type of the last token request
	lastMCPStep                            int
	explainedCIMD                          bool
	// browser says who visits the authorization endpoint.
	browser string
}

func newNarrator(w io.Writer, now func() time.Time, browser string) *narrator {
	return &narrator{w: w, now: now, tokens: map[[32]byte]bool{}, browser: browser}
}

func (n *narrator) attach(d *demoStack) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stack, n.asMeta = d, d.as.Metadata()
}

// stepf starts a numbered step; detailf adds an indented line to it.
func (n *narrator) stepf(format string, args ...any) {
	n.step++
	fmt.Fprintf(n.w, "\n%2d. %s\n", n.step, fmt.Sprintf(format, args...))
}

func (n *narrator) detailf(format string, args ...any) {
	fmt.Fprintf(n.w, "    %s\n", fmt.Sprintf(format, args...))
}

// say prints a free line (the script's own commentary and results).
func (n *narrator) say(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.w, format+"\n", args...)
}

// newToken records a token by its hash and reports whether it is new.
func (n *narrator) newToken(h [32]byte) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tokens[h] {
		return false
	}
	n.tokens[h] = true
	return true
}

func (n *narrator) mcpRequest(method, name string, hasToken, fresh bool, payload map[string]any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mcpCalls++
	if fresh {
		n.stepf("The client now holds an access token. Its payload, decoded for display (the token itself is never shown):")
		n.describeToken(payload)
	}
	op := method
	if name != "" {
		op += " " + name
	}
	defer func() { n.lastMCPStep = n.step }()
	if hasToken {
		n.stepf("MCP request %s -> %s, with the token in the Authorization header", op, n.stack.mcpURL)
	} else {
		n.stepf("MCP request %s -> %s, without a token", op, n.stack.mcpURL)
	}
}

func (n *narrator) describeToken(p map[string]any) {
	if p == nil {
		n.detailf("(not a JWT: the MCP server would have to introspect it)")
		return
	}
	n.detailf("iss        %v   (the authorization server that signed it)", p["iss"])
	n.detailf("aud        %v   (RFC 8707 audience: only this MCP server accepts it)", p["aud"])
	n.detailf("scope      %v", p["scope"])
	n.detailf("client_id  %v", p["client_id"])
	n.detailf("sub        %v", p["sub"])
	if exp, ok := p["exp"].(float64); ok {
		left := time.Unix(int64(exp), 0).Sub(n.now()).Round(time.Second)
		n.detailf("exp        in %s", left)
	}
}

func (n *narrator) mcpFailure(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.detailf("<- request failed: %v", err)
}

func (n *narrator) mcpResponse(status int, challenges []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.step != n.lastMCPStep {
		n.detailf("<- %d %s (the answer to the MCP request of step %d)", status, http.StatusText(status), n.lastMCPStep)
	} else {
		n.detailf("<- %d %s", status, http.StatusText(status))
	}
	for _, c := range challenges {
		n.detailf("   WWW-Authenticate: %s", c)
	}
	ch, _ := oauthmeta.ParseChallenges(challenges...)
	bearer, _ := oauthmeta.FindChallenge(ch, "Bearer")
	switch {
	case status == http.StatusUnauthorized && bearer.Value(oauthmeta.ParamError) == "":
		n.detailf("The server wants a token. The challenge has no error (no credentials were sent, RFC 6750 §3.1),")
		n.detailf("points to the server's protected resource metadata (RFC 9728 §5.1) and names the scope needed: %q.", bearer.Value(oauthmeta.ParamScope))
	case status == http.StatusUnauthorized:
		n.detailf("The token was refused (%s): the client refreshes or authorizes again.", bearer.Value(oauthmeta.ParamError))
	case status == http.StatusForbidden && bearer.Value(oauthmeta.ParamError) == string(oauthmeta.CodeInsufficientScope):
		n.detailf("The token is valid but lacks a scope this tool needs. The client steps up: it asks for the")
		n.detailf("scopes it had plus the challenged ones (%q), once, with a new authorization.", bearer.Value(oauthmeta.ParamScope))
	}
}

// asRequest and asResponse narrate what the authorization server sees.
func (n *narrator) asRequest(r *http.Request, form url.Values) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := &n.asMeta
	switch {
	case strings.HasPrefix(r.URL.Path, "/.well-known/"):
		if n.tokensIssued == 0 {
			n.stepf("The client fetches the authorization server's metadata (RFC 8414): GET %s", n.stack.issuer+r.URL.Path)
		} else {
			n.stepf("The MCP server fetches the authorization server's metadata to find its signing keys: GET %s", n.stack.issuer+r.URL.Path)
		}
	case r.URL.Path == pathOf(m.JWKSURI):
		n.stepf("The MCP server fetches the signing keys (jwks_uri) to verify the token's signature: GET %s", m.JWKSURI)
	case r.URL.Path == pathOf(m.AuthorizationEndpoint):
		n.describeAuthorize(r.URL.Query())
	case r.URL.Path == pathOf(m.TokenEndpoint):
		grant := form.Get("grant_type")
		n.lastGrant = grant
		n.stepf("Token request: POST %s, grant_type=%s", m.TokenEndpoint, grant)
		if grant == oauthmeta.GrantTypeTokenExchange {
			n.detailf("The MCP server (not the host) trades the user's MCP token for the provider's token, audience=%s.", form.Get("audience"))
		}
		if grant == oauthmeta.GrantTypeAuthorizationCode {
			n.detailf("The client redeems the code with its PKCE code_verifier and the same resource, at the token")
			n.detailf("endpoint it recorded before the redirect (never one named in the response).")
		}
	case r.URL.Path == pathOf(m.RegistrationEndpoint):
		n.stepf("Dynamic client registration (RFC 7591): POST %s", m.RegistrationEndpoint)
	default:
		n.stepf("Authorization server: %s %s", r.Method, r.URL.Path)
	}
}

func (n *narrator) describeAuthorize(q url.Values) {
	n.stepf("Authorization request: the client sends the user's browser (%s) to", n.browser)
	n.detailf("GET %s with", n.asMeta.AuthorizationEndpoint)
	for _, k := range []string{"response_type", "client_id", "redirect_uri", "scope", "resource", "code_challenge", "code_challenge_method"} {
		n.detailf("  %-22s %s", k, q.Get(k))
	}
	n.detailf("  %-22s (random, single use)", "state")
	n.detailf("PKCE: code_challenge is BASE64URL(SHA-256(code_verifier)); the verifier stays in the client until the")
	n.detailf("token request. resource binds the token to the MCP server (RFC 8707).")
	if strings.HasPrefix(q.Get("client_id"), "https://") && !n.explainedCIMD {
		n.explainedCIMD = true
		n.detailf("client_id is a URL: the authorization server supports Client ID Metadata Documents, so the client")
		n.detailf("needs no registration; the server fetches the document from that URL.")
	}
}

func (n *narrator) asResponse(r *http.Request, status int, h http.Header) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := &n.asMeta
	switch {
	case strings.HasPrefix(r.URL.Path, "/.well-known/") && status == http.StatusOK && n.tokensIssued == 0:
		n.detailf("<- %d: issuer %s (identical to the one asked for, or the client stops)", status, m.Issuer)
		n.detailf("   code_challenge_methods_supported %v, authorization_response_iss_parameter_supported %v,",
			m.CodeChallengeMethodsSupported, m.AuthorizationResponseISSParameterSupported)
		n.detailf("   client_id_metadata_document_supported %v, registration_endpoint %s", m.ClientIDMetadataDocumentSupported, m.RegistrationEndpoint)
	case r.URL.Path == pathOf(m.AuthorizationEndpoint) && status == http.StatusOK:
		n.detailf("<- %d: the consent page; the user approves before anything is granted, then signs in", status)
	case r.URL.Path == pathOf(m.AuthorizationEndpoint):
		n.detailf("<- %d, Location: %s", status, redactLocation(h.Get("Location")))
	case r.URL.Path == pathOf(m.TokenEndpoint) && n.lastGrant == oauthmeta.GrantTypeTokenExchange:
		if status == http.StatusOK {
			n.detailf("<- %d: the provider's access token, for the MCP server only", status)
		} else {
			n.detailf("<- %d invalid_grant with connect_uri: the account is not connected; the page to connect it is named", status)
		}
	case r.URL.Path == pathOf(m.TokenEndpoint):
		if status == http.StatusOK {
			n.tokensIssued++
		}
		n.detailf("<- %d: an access token (an RFC 9068 JWT) and a refresh token, Cache-Control: %s", status, h.Get("Cache-Control"))
	default:
		n.detailf("<- %d", status)
	}
}

// mcpServerRequest and mcpServerResponse narrate the MCP listener's other
// documents: its metadata and the demo client's metadata document.
func (n *narrator) mcpServerRequest(r *http.Request, _ url.Values) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case r.URL.Path == pathOf(n.stack.verifier.MetadataURL()):
		n.stepf("The client fetches the protected resource metadata (RFC 9728): GET %s", n.stack.verifier.MetadataURL())
	case strings.HasPrefix(r.URL.Path, demoClientDocPath):
		n.detailf("The authorization server fetches the client's metadata document %s", n.stack.clientID)
		n.detailf("(mapped to %s on this machine for the demo)", r.URL.Path)
	}
}

func (n *narrator) mcpServerResponse(r *http.Request, status int, _ http.Header) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case r.URL.Path == pathOf(n.stack.verifier.MetadataURL()):
		md := n.stack.verifier.Metadata()
		n.detailf("<- %d: resource %s (byte-identical to the URL the client called, or it stops)", status, md.Resource)
		n.detailf("   authorization_servers %v, scopes_supported %v", md.AuthorizationServers, md.ScopesSupported)
	case strings.HasPrefix(r.URL.Path, demoClientDocPath):
		n.detailf("<- %d: its client_id equals its URL, it names redirect URIs and has no secret: accepted", status)
	}
}

// authorizationStarts and authorizationResponse frame the Authorizer's work.
func (n *narrator) authorizationStarts(req *client.AuthorizationRequest) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.authorizations++
	n.stepf("Authorization #%d at %s for %s.", n.authorizations, req.Issuer(), req.Resource())
	n.detailf("Before redirecting, the client records the expected issuer, the token endpoint, the PKCE verifier,")
	n.detailf("the resource and the scopes under a fresh single-use state.")
}

func (n *narrator) authorizationResponse(u *url.URL, issuer string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	iss := u.Query().Get("iss")
	n.stepf("The redirect arrives at %s%s with state, a code (not shown) and iss=%s.", u.Host, u.Path, iss)
	if iss == issuer {
		n.detailf("iss is identical to the issuer recorded before the redirect (RFC 9207): the response comes from the")
		n.detailf("server the client chose, not a mixed-up one. Only then does the client look at the code.")
	} else {
		n.detailf("iss differs from the recorded issuer %s: the client will refuse this response (mix-up defence).", issuer)
	}
}

// summary is the closing paragraph of the narrated run.
func (n *narrator) summary() (mcpCalls, authorizations int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mcpCalls, n.authorizations
}

// narratingAuthorizer tells the narrator when an authorization starts and
// what came back, around the real Authorizer.
type narratingAuthorizer struct {
	inner client.Authorizer
	n     *narrator
}

func (a narratingAuthorizer) Authorize(ctx context.Context, req *client.AuthorizationRequest) (*url.URL, error) {
	a.n.authorizationStarts(req)
	u, err := a.inner.Authorize(ctx, req)
	if err == nil {
		a.n.authorizationResponse(u, req.Issuer())
	}
	return u, err
}

// pathOf returns the path of an absolute URL ("" if it has none).
func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return "\x00" // matches no request path
	}
	return u.Path
}

// redactLocation shows a redirect with its code and state replaced.
func redactLocation(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return "(unparsable)"
	}
	q := u.Query()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(q)) {
		v := q.Get(k)
		if k == "code" || k == "state" {
			v = "…"
		}
		parts = append(parts, k+"="+v)
	}
	u.RawQuery = ""
	return u.String() + "?" + strings.Join(parts, "&")
}
