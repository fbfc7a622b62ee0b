package storagetest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// Run checks a store implementation against the contract of
// [authserver.Storage] and of each store interface, in subtests of t:
// misses are [authserver.ErrNotFound]; a code redeems once and a refresh
// token rotates once, even when many callers try at the same moment;
// revocation sticks; a device code's keys are unique and its updates
// atomic; a pending authorization is taken once and only by a
// matching request; upstream tokens are written only over the version
// before; records are copied in and out; and [authserver.Sweeper] drops
// what expired. A store that does not implement the optional
// [authserver.RefreshTokenUser] or [authserver.Sweeper] skips their
// checks.
//
// open returns a new, empty Storage with every field set each time it is
// called; it closes what it opened when its t ends.
func Run(t *testing.T, open func(t *testing.T) authserver.Storage) {
	t.Helper()
	checked := func(t *testing.T) authserver.Storage {
		t.Helper()
		st := open(t)
		for name, f := range map[string]any{
			"Clients": st.Clients, "Codes": st.Codes, "Grants": st.Grants, "RefreshTokens": st.RefreshTokens,
			"Consents": st.Consents, "Keys": st.Keys, "Revocations": st.Revocations, "Pending": st.Pending,
			"UpstreamTokens": st.UpstreamTokens, "Devices": st.Devices,
		} {
			if f == nil {
				t.Fatalf("open returned a Storage without %s", name)
			}
		}
		return st
	}
	t.Run("contract", func(t *testing.T) { testContract(t, checked(t)) })
	t.Run("records copied", func(t *testing.T) { testRecordsCopied(t, checked(t)) })
	t.Run("upstream token versions", func(t *testing.T) { testUpstreamTokenVersions(t, checked(t).UpstreamTokens) })
	t.Run("grant listing", func(t *testing.T) { testGrantLister(t, checked(t)) })
	t.Run("connected accounts", func(t *testing.T) { testConnect(t, checked(t).Connect) })
	t.Run("device codes", func(t *testing.T) { testDeviceCodes(t, checked(t).Devices) })
}

// storageNow is the time of the checks.
var storageNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// sweep sweeps every store of st that is a Sweeper at now, and reports
// whether there was one.
func sweep(t *testing.T, now time.Time, stores ...any) bool {
	t.Helper()
	found := false
	for _, s := range stores {
		if sw, ok := s.(authserver.Sweeper); ok {
			found = true
			if err := sw.Sweep(context.Background(), now); err != nil {
				t.Fatal(err)
			}
		}
	}
	return found
}

// testContract runs the checks in order on one store: the sweep at the
// end finds what the earlier ones saved.
func testContract(t *testing.T, st authserver.Storage) {
	ctx := context.Background()
	now := storageNow
	t.Run("codes", func(t *testing.T) {
		if _, err := st.Codes.Code(ctx, "missing"); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("Code(missing) = %v", err)
		}
		if _, err := st.Codes.RedeemCode(ctx, "missing", "g"); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("RedeemCode(missing) = %v", err)
		}
		c := &authserver.Code{Key: "k1", ClientID: "c", Scopes: []string{"a"}, IssuedAt: now, ExpiresAt: now.Add(time.Minute)}
		if err := st.Codes.SaveCode(ctx, c); err != nil {
			t.Fatal(err)
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				got, err := st.Codes.RedeemCode(ctx, "k1", "grant-"+string(rune('a'+i)))
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, authserver.ErrAlreadyUsed) || got == nil || got.RedeemedBy == "":
					t.Errorf("RedeemCode = %+v, %v", got, err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d concurrent redemptions succeeded, want 1", wins.Load())
		}
		got, err := st.Codes.Code(ctx, "k1")
		if err != nil || got.RedeemedBy == "" || got.ClientID != "c" || got.Scopes[0] != "a" {
			t.Fatalf("Code = %+v, %v", got, err)
		}
	})
	t.Run("grants and refresh tokens", func(t *testing.T) {
		g := &authserver.Grant{ID: "g1", ClientID: "c", Subject: "u", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := st.Grants.SaveGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
		if err := st.RefreshTokens.SaveRefreshToken(ctx, &authserver.RefreshToken{Key: "r0", GrantID: "g1", ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				err := st.RefreshTokens.RotateRefreshToken(ctx, "r0",
					&authserver.RefreshToken{Key: "r1-" + string(rune('a'+i)), GrantID: "g1", ExpiresAt: now.Add(time.Hour)})
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, authserver.ErrAlreadyUsed):
					t.Errorf("RotateRefreshToken = %v", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d concurrent rotations succeeded, want 1", wins.Load())
		}
		if err := st.RefreshTokens.RotateRefreshToken(ctx, "missing", &authserver.RefreshToken{Key: "x"}); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("rotating a missing token: %v", err)
		}
		if rt, err := st.RefreshTokens.RefreshToken(ctx, "r0"); err != nil || !rt.Rotated || rt.GrantID != "g1" {
			t.Fatalf("RefreshToken = %+v, %v", rt, err)
		}
		if err := st.Grants.RevokeGrant(ctx, "g1"); err != nil {
			t.Fatal(err)
		}
		if err := st.Grants.RevokeGrant(ctx, "missing"); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("RevokeGrant(missing) = %v", err)
		}
		if got, err := st.Grants.Grant(ctx, "g1"); err != nil || !got.Revoked || got.Subject != "u" {
			t.Fatalf("Grant = %+v, %v", got, err)
		}
	})
	t.Run("use refresh token", func(t *testing.T) { testUseRefreshToken(t, st, now) })
	t.Run("consents and revocations", func(t *testing.T) {
		if _, err := st.Consents.Consent(ctx, "u", "c"); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("Consent(missing) = %v", err)
		}
		if err := st.Consents.SaveConsent(ctx, &authserver.Consent{Subject: "u", ClientID: "c", Scopes: []string{"a"}, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if c, err := st.Consents.Consent(ctx, "u", "c"); err != nil || c.Scopes[0] != "a" {
			t.Fatalf("Consent = %+v, %v", c, err)
		}
		if ok, err := st.Revocations.AccessTokenRevoked(ctx, "j1"); ok || err != nil {
			t.Fatalf("AccessTokenRevoked before = %v, %v", ok, err)
		}
		for range 2 {
			if err := st.Revocations.RevokeAccessToken(ctx, "j1", now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := st.Revocations.AccessTokenRevoked(ctx, "j1"); !ok || err != nil {
			t.Fatalf("AccessTokenRevoked after = %v, %v", ok, err)
		}
	})
	t.Run("pending", func(t *testing.T) { testPending(t, st.Pending, now) })
	t.Run("clients and keys", func(t *testing.T) {
		if _, err := st.Clients.Client(ctx, "missing"); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("Client(missing) = %v", err)
		}
		if err := st.Clients.SaveClient(ctx, &authserver.Client{ID: "c1", Secret: "plain", SecretHash: "h", RedirectURIs: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
		if c, err := st.Clients.Client(ctx, "c1"); err != nil || c.Secret != "" || c.SecretHash != "h" {
			t.Fatalf("Client = %+v, %v", c, err)
		}
		k := &authserver.SigningKey{ID: "kid-1", Algorithm: "ES256", PrivateJWK: []byte(testJWK), CreatedAt: now, ActiveAt: now}
		if err := st.Keys.SaveSigningKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		k.RetireAt = now.Add(time.Hour)
		if err := st.Keys.SaveSigningKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		keys, err := st.Keys.SigningKeys(ctx)
		if err != nil || len(keys) != 1 || !bytes.Equal(keys[0].PrivateJWK, k.PrivateJWK) || !keys[0].RetireAt.Equal(now.Add(time.Hour)) {
			t.Fatalf("SigningKeys = %+v, %v", keys, err)
		}
		if err := st.Keys.DeleteSigningKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		if keys, err := st.Keys.SigningKeys(ctx); err != nil || len(keys) != 0 {
			t.Fatalf("after delete: %d keys, %v", len(keys), err)
		}
	})
	t.Run("sweep", func(t *testing.T) {
		if !sweep(t, now.Add(2*time.Hour), st.Codes, st.Grants, st.RefreshTokens, st.Consents) {
			t.Skip("no store is a Sweeper")
		}
		for _, err := range []error{
			func() error { _, err := st.Codes.Code(ctx, "k1"); return err }(),
			func() error { _, err := st.Grants.Grant(ctx, "g1"); return err }(),
			func() error { _, err := st.RefreshTokens.RefreshToken(ctx, "r0"); return err }(),
			func() error { _, err := st.Consents.Consent(ctx, "u", "c"); return err }(),
		} {
			if !errors.Is(err, authserver.ErrNotFound) {
				t.Errorf("after sweep: %v, want ErrNotFound", err)
			}
		}
	})
}

// testJWK stands for a private JSON Web Key: a store keeps it as bytes
// and never parses it.
const testJWK = `{"kty":"EC","crv":"P-256","kid":"kid-1","x":"eA","y":"eQ","d":"ZA"}`

// testPending: a pending authorization is taken only by a request that
// match accepts, only before it expires, and only once.
func testPending(t *testing.T, st authserver.PendingStore, now time.Time) {
	ctx := context.Background()
	rec := &authserver.PendingAuthorization{
		ID: "p1", CSRFHash: "csrf-hash", BrowserHash: "browser-hash",
		Client:      &authserver.Client{ID: "c", Kind: authserver.ClientDynamic, RedirectURIs: []string{"http://127.0.0.1/cb"}},
		RedirectURI: "http://127.0.0.1/cb", State: "s", Challenge: "ch", Scopes: []string{"a"},
		Step: "choose", Provider: "corp", LoginHint: "alice@corp.example", Consented: true, ExpiresAt: now.Add(authserver.PendingTTL),
	}
	matcher := func(csrf, browser string) func(*authserver.PendingAuthorization) bool {
		return func(p *authserver.PendingAuthorization) bool { return p.CSRFHash == csrf && p.BrowserHash == browser }
	}
	if err := st.SavePending(ctx, rec); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][2]string{{"csrf-hash", "other"}, {"other", "browser-hash"}, {"csrf-hash", ""}} {
		if _, err := st.TakePending(ctx, "p1", now, matcher(bad[0], bad[1])); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("TakePending with %q = %v, want ErrNotFound", bad, err)
		}
	}
	if _, err := st.TakePending(ctx, "p1", now.Add(authserver.PendingTTL), matcher("csrf-hash", "browser-hash")); !errors.Is(err, authserver.ErrNotFound) {
		t.Fatalf("TakePending after expiry = %v", err)
	}
	if _, err := st.TakePending(ctx, "missing", now, matcher("csrf-hash", "browser-hash")); !errors.Is(err, authserver.ErrNotFound) {
		t.Fatalf("TakePending(missing) = %v", err)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			p, err := st.TakePending(ctx, "p1", now, matcher("csrf-hash", "browser-hash"))
			switch {
			case err == nil:
				wins.Add(1)
				if p.Client == nil || p.Client.ID != "c" || p.State != "s" || p.Challenge != "ch" || len(p.Scopes) != 1 || p.Scopes[0] != "a" ||
					p.Step != "choose" || p.Provider != "corp" || p.LoginHint != "alice@corp.example" || !p.Consented {
					t.Errorf("taken record = %+v", p)
				}
			case !errors.Is(err, authserver.ErrNotFound):
				t.Errorf("TakePending = %v", err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d takes succeeded, want 1", wins.Load())
	}
}

// testUseRefreshToken checks [authserver.RefreshTokenUser] against its
// definition, [authserver.RefreshUse.Admits]: it rotates exactly the
// tokens Admits accepts, into the successor with the token's grant,
// client and expiry, returns the grant, and otherwise changes nothing; of
// concurrent uses one wins.
func testUseRefreshToken(t *testing.T, st authserver.Storage, now time.Time) {
	ctx := context.Background()
	user, ok := st.RefreshTokens.(authserver.RefreshTokenUser)
	if !ok {
		t.Skipf("%T does not implement RefreshTokenUser", st.RefreshTokens)
	}
	hour := now.Add(time.Hour)
	type (
		grant = authserver.Grant
		token = authserver.RefreshToken
		use   = authserver.RefreshUse
	)
	for i, tc := range []struct {
		name    string
		grant   *grant // nil: none saved
		token   token
		use     use
		revoked bool
		admits  bool
	}{
		{name: "unbound", grant: &grant{ExpiresAt: hour}, token: token{ExpiresAt: hour}, admits: true},
		{name: "unbound, with a proof", grant: &grant{ExpiresAt: hour}, token: token{ExpiresAt: hour}, use: use{JKT: "k"}, admits: true},
		{name: "bound, its key", grant: &grant{DPoPJKT: "k", ExpiresAt: hour}, token: token{ExpiresAt: hour}, use: use{JKT: "k"}, admits: true},
		{name: "bound, no proof", grant: &grant{DPoPJKT: "k", ExpiresAt: hour}, token: token{ExpiresAt: hour}},
		{name: "bound, another key", grant: &grant{DPoPJKT: "k", ExpiresAt: hour}, token: token{ExpiresAt: hour}, use: use{JKT: "x"}},
		{name: "another client", grant: &grant{ExpiresAt: hour}, token: token{ExpiresAt: hour}, use: use{ClientID: "other"}},
		{name: "token expired", grant: &grant{ExpiresAt: hour}, token: token{ExpiresAt: now}},
		{name: "grant expired", grant: &grant{ExpiresAt: now}, token: token{ExpiresAt: hour}},
		{name: "grant revoked", grant: &grant{ExpiresAt: hour}, token: token{ExpiresAt: hour}, revoked: true},
		{name: "no grant", token: token{ExpiresAt: hour}},
		{name: "rotated", grant: &grant{ExpiresAt: hour}, token: token{ExpiresAt: hour, Rotated: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "use-" + strconv.Itoa(i)
			tok := tc.token
			tok.Key, tok.GrantID, tok.ClientID, tok.IssuedAt = id+"-r0", id, "c", now.Add(-time.Minute)
			var g *grant
			if tc.grant != nil {
				g = tc.grant
				g.ID, g.ClientID, g.Subject, g.Scopes, g.Resources, g.CreatedAt = id, "c", "u", []string{"a", "b"}, []string{"https://r.example/"}, now
				if err := st.Grants.SaveGrant(ctx, g); err != nil {
					t.Fatal(err)
				}
				if tc.revoked {
					if err := st.Grants.RevokeGrant(ctx, id); err != nil {
						t.Fatal(err)
					}
					g.Revoked = true
				}
			}
			if err := st.RefreshTokens.SaveRefreshToken(ctx, &tok); err != nil {
				t.Fatal(err)
			}
			u := tc.use
			u.Key, u.NextKey, u.ClientID, u.Now = tok.Key, id+"-r1", cmp.Or(u.ClientID, "c"), now
			if u.Admits(&tok, g) != tc.admits {
				t.Fatalf("RefreshUse.Admits = %v, want %v", !tc.admits, tc.admits)
			}
			got, err := user.UseRefreshToken(ctx, u)
			if !tc.admits {
				if !errors.Is(err, authserver.ErrNotFound) {
					t.Fatalf("UseRefreshToken = %+v, %v, want ErrNotFound", got, err)
				}
				if old, err := st.RefreshTokens.RefreshToken(ctx, tok.Key); err != nil || old.Rotated != tok.Rotated {
					t.Fatalf("refused token changed: %+v, %v", old, err)
				}
				if _, err := st.RefreshTokens.RefreshToken(ctx, u.NextKey); !errors.Is(err, authserver.ErrNotFound) {
					t.Fatalf("refused use saved a successor: %v", err)
				}
				return
			}
			if err != nil || got.ID != id || got.Subject != "u" || got.ClientID != "c" || got.DPoPJKT != g.DPoPJKT || got.Revoked ||
				strings.Join(got.Scopes, " ") != "a b" || len(got.Resources) != 1 || !got.ExpiresAt.Equal(g.ExpiresAt) {
				t.Fatalf("UseRefreshToken = %+v, %v", got, err)
			}
			if old, err := st.RefreshTokens.RefreshToken(ctx, tok.Key); err != nil || !old.Rotated {
				t.Fatalf("used token: %+v, %v", old, err)
			}
			next, err := st.RefreshTokens.RefreshToken(ctx, u.NextKey)
			if err != nil || next.Key != u.NextKey || next.GrantID != id || next.ClientID != "c" || next.Rotated ||
				!next.IssuedAt.Equal(now) || !next.ExpiresAt.Equal(tok.ExpiresAt) {
				t.Fatalf("successor = %+v, %v", next, err)
			}
			if _, err := user.UseRefreshToken(ctx, u); !errors.Is(err, authserver.ErrNotFound) {
				t.Fatalf("second use = %v, want ErrNotFound", err)
			}
		})
	}
	t.Run("concurrent", func(t *testing.T) {
		if err := st.Grants.SaveGrant(ctx, &grant{ID: "use-c", ClientID: "c", ExpiresAt: hour}); err != nil {
			t.Fatal(err)
		}
		if err := st.RefreshTokens.SaveRefreshToken(ctx, &token{Key: "use-c-r0", GrantID: "use-c", ClientID: "c", ExpiresAt: hour}); err != nil {
			t.Fatal(err)
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				_, err := user.UseRefreshToken(ctx, use{Key: "use-c-r0", NextKey: "use-c-r1-" + strconv.Itoa(i), ClientID: "c", Now: now})
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, authserver.ErrNotFound):
					t.Errorf("UseRefreshToken = %v", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d concurrent uses succeeded, want 1", wins.Load())
		}
	})
}

// testRecordsCopied: a store keeps its records apart from its callers'
// values. Changing a record after saving it, or one that a read returned,
// changes nothing stored: the next read returns the record as it was
// saved.
func testRecordsCopied(t *testing.T, st authserver.Storage) {
	ctx := context.Background()
	now := storageNow
	c := &authserver.Client{ID: "c1", RedirectURIs: []string{"https://a.example/cb"}, GrantTypes: []string{"authorization_code"},
		AllowedScopes: []string{"s"}, DefaultScopes: []string{"s"}, AuthMethod: "none"}
	checkCopied(t, "client", c, func() error { return st.Clients.SaveClient(ctx, c) },
		func() (any, error) { return st.Clients.Client(ctx, "c1") },
		func(v any) {
			c := v.(*authserver.Client)
			c.RedirectURIs[0], c.GrantTypes[0], c.AllowedScopes[0], c.DefaultScopes[0], c.AuthMethod = "x", "x", "x", "x", "x"
		})
	code := &authserver.Code{Key: "k1", ClientID: "c1", Scopes: []string{"s"}, Resources: []string{"https://r.example"}, IssuedAt: now, ExpiresAt: now.Add(time.Minute)}
	checkCopied(t, "code", code, func() error { return st.Codes.SaveCode(ctx, code) },
		func() (any, error) { return st.Codes.Code(ctx, "k1") },
		func(v any) {
			c := v.(*authserver.Code)
			c.Scopes[0], c.Resources[0], c.ClientID, c.RedeemedBy = "x", "x", "x", "x"
		})
	g := &authserver.Grant{ID: "g1", ClientID: "c1", Subject: "u", Scopes: []string{"s"}, Resources: []string{"https://r.example"},
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	checkCopied(t, "grant", g, func() error { return st.Grants.SaveGrant(ctx, g) },
		func() (any, error) { return st.Grants.Grant(ctx, "g1") },
		func(v any) {
			g := v.(*authserver.Grant)
			g.Scopes[0], g.Resources[0], g.Subject, g.Revoked = "x", "x", "x", true
		})
	rt := &authserver.RefreshToken{Key: "r1", GrantID: "g1", ClientID: "c1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	checkCopied(t, "refresh token", rt, func() error { return st.RefreshTokens.SaveRefreshToken(ctx, rt) },
		func() (any, error) { return st.RefreshTokens.RefreshToken(ctx, "r1") },
		func(v any) {
			rt := v.(*authserver.RefreshToken)
			rt.GrantID, rt.Rotated = "x", true
		})
	cs := &authserver.Consent{Subject: "u", ClientID: "c1", RedirectURI: "https://a.example/cb", Scopes: []string{"s"},
		Resources: []string{"https://r.example"}, Browsers: []string{"b1"}, GrantedAt: now, ExpiresAt: now.Add(time.Hour)}
	checkCopied(t, "consent", cs, func() error { return st.Consents.SaveConsent(ctx, cs) },
		func() (any, error) { return st.Consents.Consent(ctx, "u", "c1") },
		func(v any) {
			cs := v.(*authserver.Consent)
			cs.Scopes[0], cs.Resources[0], cs.Browsers[0], cs.RedirectURI = "x", "x", "x", "x"
		})
	k := &authserver.SigningKey{ID: "kid1", Algorithm: "ES256", PrivateJWK: []byte(`{"kty":"EC"}`), CreatedAt: now, ActiveAt: now}
	checkCopied(t, "signing key", k, func() error { return st.Keys.SaveSigningKey(ctx, k) },
		func() (any, error) {
			keys, err := st.Keys.SigningKeys(ctx)
			if err != nil || len(keys) != 1 {
				return nil, fmt.Errorf("%d keys, %w", len(keys), err)
			}
			return keys[0], nil
		},
		func(v any) {
			k := v.(*authserver.SigningKey)
			k.PrivateJWK[0], k.Algorithm = 'x', "x"
		})
	ut := &authserver.UpstreamTokens{ID: "u1", GrantID: "g1", Sealed: []byte{1, 2, 3}, Version: 1, ExpiresAt: now.Add(time.Hour)}
	checkCopied(t, "upstream tokens", ut, func() error { return st.UpstreamTokens.SaveUpstreamTokens(ctx, ut) },
		func() (any, error) { return st.UpstreamTokens.UpstreamTokens(ctx, "u1") },
		func(v any) {
			ut := v.(*authserver.UpstreamTokens)
			ut.Sealed[0], ut.GrantID, ut.LeaseOwner = 9, "x", "x"
		})
}

// checkCopied saves rec, changes it, reads it back, changes what the read
// returned and reads it again: both reads must equal rec as it was saved.
func checkCopied(t *testing.T, what string, rec any, save func() error, get func() (any, error), change func(any)) {
	t.Helper()
	want, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := save(); err != nil {
		t.Fatalf("%s: save: %v", what, err)
	}
	change(rec)
	for _, when := range []string{"after changing the saved record", "after changing the record read"} {
		got, err := get()
		if err != nil {
			t.Fatalf("%s: read %s: %v", what, when, err)
		}
		if data, _ := json.Marshal(got); !bytes.Equal(data, want) {
			t.Errorf("%s: read %s:\n%s\nwant\n%s", what, when, data, want)
		}
		change(got)
	}
}

// testUpstreamTokenVersions: a store writes an upstream token record only
// over the version before it, and keeps its refresh lease.
func testUpstreamTokenVersions(t *testing.T, st authserver.UpstreamTokenStore) {
	ctx := context.Background()
	now := storageNow
	if _, err := st.UpstreamTokens(ctx, "x"); !errors.Is(err, authserver.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	r := &authserver.UpstreamTokens{ID: "x", Sealed: []byte{1, 2}, Version: 1, ExpiresAt: now}
	if err := st.SaveUpstreamTokens(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveUpstreamTokens(ctx, r); !errors.Is(err, authserver.ErrAlreadyUsed) {
		t.Fatalf("second insert: %v", err)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			n := &authserver.UpstreamTokens{ID: "x", GrantID: "g", Sealed: []byte{3}, Version: 2, ExpiresAt: now.Add(time.Hour)}
			switch err := st.SaveUpstreamTokens(ctx, n); {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, authserver.ErrAlreadyUsed):
				t.Errorf("SaveUpstreamTokens = %v", err)
			}
		})
	}
	wg.Wait()
	got, err := st.UpstreamTokens(ctx, "x")
	if wins.Load() != 1 || err != nil || got.Version != 2 || got.GrantID != "g" || !bytes.Equal(got.Sealed, []byte{3}) {
		t.Fatalf("%d writers won; stored %+v, %v", wins.Load(), got, err)
	}
	// The refresh lease is stored with the record and cleared with it.
	leased := *got
	leased.LeaseOwner, leased.LeaseUntil, leased.Version = "owner-1", now.Add(time.Minute), 3
	if err := st.SaveUpstreamTokens(ctx, &leased); err != nil {
		t.Fatal(err)
	}
	if got, err = st.UpstreamTokens(ctx, "x"); err != nil || got.LeaseOwner != "owner-1" || !got.LeaseUntil.Equal(now.Add(time.Minute)) {
		t.Fatalf("leased record read back as %+v, %v", got, err)
	}
	leased.LeaseOwner, leased.LeaseUntil, leased.Version = "", time.Time{}, 4
	if err := st.SaveUpstreamTokens(ctx, &leased); err != nil {
		t.Fatal(err)
	}
	if got, err = st.UpstreamTokens(ctx, "x"); err != nil || got.LeaseOwner != "" || !got.LeaseUntil.IsZero() {
		t.Fatalf("released record read back as %+v, %v", got, err)
	}
	if sweep(t, now.Add(2*time.Hour), st) {
		if _, err := st.UpstreamTokens(ctx, "x"); !errors.Is(err, authserver.ErrNotFound) {
			t.Errorf("expired record not swept: %v", err)
		}
	}
	if err := st.DeleteUpstreamTokens(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpstreamTokens(ctx, "x"); !errors.Is(err, authserver.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
}
