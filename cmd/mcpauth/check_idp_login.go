package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/selfcheck"
)

const idpLoginDescription = `

With --login (and --resource, the MCP server whose metadata names the provider) it logs in once
as 'mcpauth login URL' does, with a token file of its own that is deleted afterwards: --client-id,
--client-secret, --scopes, --browser and --auth-param mean what they mean there. It reports the
iss of the authorization response, whether the token's aud names the resource, and whether a
refresh token is issued, refreshing works, rotates it and yields a token the preset accepts; the
token rows then grade the token the login obtained.`

// idpLoginFlags are check --idp's --login and the client flags of login
// it takes, stored in the clientFlags that `mcpauth login` opens its
// session with.
type idpLoginFlags struct {
	on     bool
	client clientFlags
}

func (f *idpLoginFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "login", false, "with --idp and --resource: log in once as `mcpauth login` does and grade the authorization response, the token and its refresh")
	fs.StringVar(&f.client.clientID, "client-id", "", "with --login: a pre-registered client_id at the provider (default: a Client ID Metadata Document or dynamic registration)")
	fs.StringVar(&f.client.clientSecret, "client-secret", "", "with --login: the client's secret; env:VAR reads $VAR (default: a public client)")
	fs.StringVar(&f.client.scopes, "scopes", "", "with --login: scopes to ask for besides the server's (spaces or commas)")
	fs.StringVar(&f.client.browser, "browser", "system", "with --login: how to get the approval: system, print or http (as for login)")
	f.client.authParams.register(fs)
}

// used reports whether any of the flags was given.
func (f *idpLoginFlags) used() bool {
	c := &f.client
	return f.on || c.clientID != "" || c.clientSecret != "" || c.scopes != "" || c.browser != "system" || c.authParams.set()
}

// issSeen is an Authorizer that notes the iss parameter of the
// authorization response its Authorizer returns.
type issSeen struct {
	client.Authorizer
	mu                     sync.Mutex
	redirected, issPresent bool
	iss                    string
}

// Authorize implements client.Authorizer.
func (a *issSeen) Authorize(ctx context.Context, req *client.AuthorizationRequest) (*url.URL, error) {
	u, err := a.Authorizer.Authorize(ctx, req)
	if u != nil {
		q, _ := url.ParseQuery(u.RawQuery)
		vals, present := q["iss"]
		a.mu.Lock()
		a.redirected, a.issPresent = true, present
		if len(vals) > 0 {
			a.iss = vals[0]
		}
		a.mu.Unlock()
	}
	return u, err
}

// idpLogin runs one login for check --idp --login with the session of
// `mcpauth login`, then one refresh by the client library (the stored
// token marked expired). It returns an error only when the flags are
// unusable; the login's own failure is in the result.
func idpLogin(ctx context.Context, f *checkFlags, stderr io.Writer) (*selfcheck.IdPLogin, error) {
	dir, err := os.MkdirTemp("", "mcpauth-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cf := &f.idp.login.client
	cf.issuer, cf.insecureHTTP, cf.timeout = f.idp.issuer, f.insecureHTTP, f.timeout
	cf.store, cf.tokenStore, cf.log = filepath.Join(dir, "tokens.json"), "file", logFlags{format: "text", level: "warn"}
	seen := &issSeen{}
	cf.wrapAuthorizer = func(a client.Authorizer) client.Authorizer { seen.Authorizer = a; return seen }
	s, err := cf.open(ctx, f.idp.resource, stderr)
	if err != nil {
		return nil, err
	}
	defer s.client.CloseIdleConnections()
	out := &selfcheck.IdPLogin{}
	out.Err = s.login(ctx)
	seen.mu.Lock()
	out.Redirected, out.ISSPresent, out.ISS = seen.redirected, seen.issPresent, seen.iss
	seen.mu.Unlock()
	if out.Err != nil {
		return out, nil
	}
	g, ok := s.store.lastGrant()
	switch {
	case !ok:
		out.Err = errors.New("no token stored after the login")
		return out, nil
	case g.key.Issuer != f.idp.issuer:
		out.Err = fmt.Errorf("the resource's authorization server is %s, not --idp", g.key.Issuer)
		return out, nil
	}
	tok, err := s.store.Token(ctx, g.key)
	if err != nil {
		out.Err = err
		return out, nil
	}
	out.AccessToken, out.RefreshToken = tok.AccessToken, tok.RefreshToken
	if tok.RefreshToken == "" {
		return out, nil
	}
	tok.Expiry = time.Unix(1, 0) // expired: the client refreshes it
	if err := s.store.PutToken(ctx, g.key, tok); err != nil {
		out.RefreshErr = err
		return out, nil
	}
	fresh, err := s.token(ctx)
	switch {
	case err != nil:
		out.RefreshErr = err
	case fresh == nil || fresh.AccessToken == tok.AccessToken:
		out.RefreshErr = errors.New("the provider refused the refresh token")
	default:
		out.Refreshed = fresh.AccessToken
		if stored, err := s.store.Token(ctx, g.key); err == nil {
			out.RefreshedRefreshToken = stored.RefreshToken
		}
	}
	return out, nil
}
