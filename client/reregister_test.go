package client

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestRefusedDynamicRegistration: when the token endpoint answers
// invalid_client for a dynamic registration stored by an earlier run (the
// server deleted it), the client drops the registration (and, on refresh,
// the token bound to it), registers again and starts one fresh
// authorization; the refused code or refresh token is never sent with the
// new client_id. A refusal of the new registration too is reported, as is
// any refusal of a pre-registered or Client ID Metadata Document client,
// without registering.
func TestRefusedDynamicRegistration(t *testing.T) {
	t.Parallel()
	const (
		refresh = "refresh" // the token expired: the refresh is refused
		code    = "code"    // no token: the code exchange is refused
	)
	for _, tc := range []struct {
		name        string
		kind        string // "dynamic", "pre-registered" or "cimd"
		path        string
		forgetAfter []int // authorizations of the second login after which the server forgets their client
		wantOK      bool  // the second login succeeds
		wantReg     int   // registrations in all
		wantAut     int   // authorizations in all
	}{
		{"refresh refused, registered again", "dynamic", refresh, nil, true, 2, 2},
		{"refresh refused, the new registration refused too", "dynamic", refresh, []int{1}, false, 2, 2},
		{"code refused, registered again", "dynamic", code, []int{1}, true, 2, 3},
		{"code refused, the new registration refused too", "dynamic", code, []int{1, 2}, false, 2, 3},
		{"pre-registered client refused at refresh", "pre-registered", refresh, nil, false, 0, 2},
		{"pre-registered client refused at the code exchange", "pre-registered", code, []int{1}, false, 0, 2},
		{"metadata document client refused at the code exchange", "cimd", code, []int{1}, false, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			opts := oauthtest.ASOptions{IssueRefreshTokens: true}
			switch tc.kind {
			case "pre-registered":
				opts.PreRegistered = []oauthtest.RegisteredClient{{ID: "pre", Method: "none"}}
			case "cimd":
				opts.CIMD = true
			}
			e := &env{t: t, clock: oauthtest.NewClock(oauthtest.Epoch()), store: tokenstore.NewMemory(), logs: &syncBuffer{}}
			e.as = oauthtest.NewAS(t, opts)
			e.rs = oauthtest.NewResource(t, oauthtest.ResourceOptions{}, e.as)
			// forget makes the authorization server forget the client of
			// the last authorization request.
			forget := func() {
				a := e.as.Authorizations()
				if tc.kind == "cimd" {
					e.as.Update(func(o *oauthtest.ASOptions) { o.CIMD = false })
				}
				e.as.ForgetClient(a[len(a)-1].Get("client_id"))
			}
			var second atomic.Bool      // the second login runs
			var authorized atomic.Int32 // its authorizations
			cfg := Config{
				Authorizer: &hookAuthorizer{after: func(u *url.URL) *url.URL {
					if second.Load() && slices.Contains(tc.forgetAfter, int(authorized.Add(1))) {
						forget()
					}
					return u
				}},
				Store: e.store, InsecureAllowHTTPLoopback: true, Now: e.clock.Now,
				Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			}
			switch tc.kind {
			case "pre-registered":
				cfg.PreRegistered = []PreRegisteredClient{{Issuer: e.as.Issuer(), ClientID: "pre"}}
			case "cimd":
				cfg.ClientIDMetadataURL = testCIMD
			}
			var err error
			if e.c, err = New(cfg); err != nil {
				t.Fatal(err)
			}
			if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
				t.Fatalf("first login: %v", err)
			}
			key, tok := e.storedToken(ctx)
			if tok == nil || tok.RefreshToken == "" {
				t.Fatalf("first login stored %v", tok)
			}
			first := key.ClientID
			switch tc.path {
			case refresh:
				forget()
				e.clock.Advance(2 * time.Hour)
			case code:
				if err := e.store.DeleteToken(ctx, *key); err != nil {
					t.Fatal(err)
				}
			}
			tokensBefore := len(e.as.TokenRequests())
			second.Store(true)
			err = e.c.Login(ctx, e.rs.MCPURL())
			switch {
			case tc.wantOK && err != nil:
				t.Fatalf("second login: %v", err)
			case !tc.wantOK && err == nil:
				t.Fatal("second login succeeded, want the refusal reported")
			case !tc.wantOK && tc.path == code && !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidClient}):
				t.Fatalf("second login: %v, want invalid_client", err)
			}
			if n := e.as.Hits("/register"); n != tc.wantReg {
				t.Errorf("%d registrations, want %d", n, tc.wantReg)
			}
			if n := e.as.Hits("/authorize"); n != tc.wantAut {
				t.Errorf("%d authorizations, want %d", n, tc.wantAut)
			}
			// A refused code or refresh token is never sent again, nor with
			// another client_id.
			sent := map[string]string{}
			for _, tr := range e.as.TokenRequests()[tokensBefore:] {
				for _, p := range []string{"code", "refresh_token"} {
					if v := tr.Form.Get(p); v != "" {
						if id, dup := sent[v]; dup {
							t.Errorf("%s sent twice (client %s, then %s)", p, id, tr.Form.Get("client_id"))
						}
						sent[v] = tr.Form.Get("client_id")
					}
				}
			}
			if !tc.wantOK {
				return
			}
			key, tok = e.storedToken(ctx)
			reg, rerr := e.store.Registration(ctx, key.Issuer)
			if tok == nil || rerr != nil || reg.ClientID == first || key.ClientID != reg.ClientID {
				t.Fatalf("after recovery: token %v under %s, registration %v (%v), first client %s", tok, key.ClientID, reg, rerr, first)
			}
			if _, ok := e.as.Lookup(tok.AccessToken); !ok {
				t.Error("the new token is not one the server issued")
			}
			old := *key
			old.ClientID = first
			if _, err := e.store.Token(ctx, old); err == nil {
				t.Error("the token of the refused client is still stored")
			}
		})
	}
}
