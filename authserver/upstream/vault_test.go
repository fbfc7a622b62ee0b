package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/seal"
	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

const (
	rsID       = "mcp-rs"
	rsSecret   = "rs-secret"
	rsResource = "https://mcp.example.com/mcp"
	notRSID    = "other-service"
	vaultAud   = "idp"
)

var testVaultKey = bytes.Repeat([]byte{9}, 32)

// vaultHarness is an upstream harness with a token vault and a resource
// server client allowed to exchange tokens for rsResource.
func vaultHarness(t *testing.T, ttl time.Duration, mutate func(*testConfig)) (*harness, *fakeProvider, *fakeUpstreamTokens) {
	vt := newFakeUpstreamTokens(ttl)
	h, p := upstreamHarness(t, func(c *testConfig) {
		withVault(c)
		if mutate != nil {
			mutate(c)
		}
	})
	p.set(func(p *fakeProvider) { p.vaultTokens = vt })
	return h, p, vt
}

// withVault adds the token vault and the resource server clients to c.
func withVault(c *testConfig) {
	c.Clients = append(c.Clients,
		authserver.Client{ID: rsID, Secret: rsSecret, GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}},
		authserver.Client{ID: notRSID, Secret: "other-secret", GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}})
	c.TokenVault = &tokenVaultConfig{
		Keys: [][]byte{testVaultKey}, Audience: vaultAud, ResourceServers: map[string]string{rsID: rsResource},
	}
}

// vaultLogin logs the user in through the provider for resource and
// returns our tokens.
func vaultLogin(t *testing.T, h *harness, resource string) *oauthmeta.TokenResponse {
	t.Helper()
	b := newBrowser(t, h)
	q, verifier := authParams(publicID, publicCB)
	q.Set("resource", resource)
	loc := location(t, b.login(q))
	res := h.exchange(loc.Query().Get("code"), verifier, publicCB, nil)
	if res.tok == nil {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	return res.tok
}

// upstreamExchange asks for the upstream token as the resource server.
func upstreamExchange(h *harness, subject string, edit func(url.Values)) tokenResult {
	h.t.Helper()
	return upstreamExchangeHeader(h, subject, edit, nil)
}

// upstreamExchangeHeader is upstreamExchange with extra request headers
// (to pin a replica).
func upstreamExchangeHeader(h *harness, subject string, edit func(url.Values), extra http.Header) tokenResult {
	h.t.Helper()
	form := url.Values{
		"grant_type": {oauthmeta.GrantTypeTokenExchange}, "subject_token": {subject},
		"subject_token_type": {oauthmeta.TokenTypeAccessToken}, "audience": {vaultAud},
	}
	user, pass := rsID, rsSecret
	if edit != nil {
		edit(form)
		if form.Has("user") {
			user, pass = form.Get("user"), form.Get("pass")
			form.Del("user")
			form.Del("pass")
		}
	}
	return h.tokenHeader(form, user, pass, extra)
}

func TestTokenVaultExchange(t *testing.T) {
	h, p, vt := vaultHarness(t, time.Hour, nil)
	tok := vaultLogin(t, h, rsResource)
	issued, _ := vt.state()

	res := upstreamExchange(h, tok.AccessToken, nil)
	if res.tok == nil || res.tok.AccessToken != issued[0] || res.tok.TokenType != "Bearer" ||
		res.tok.IssuedTokenType != oauthmeta.TokenTypeAccessToken || res.tok.ExpiresIn != 3600 || res.tok.RefreshToken != "" {
		t.Fatalf("exchange: %d %s", res.status, res.body)
	}
	if cc := res.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	// The upstream issuer identifier names the provider too, as audience or resource.
	for _, param := range []string{"audience", "resource"} {
		res = upstreamExchange(h, tok.AccessToken, func(f url.Values) { f.Del("audience"); f.Set(param, p.issuer) })
		if res.tok == nil || res.tok.AccessToken != issued[0] {
			t.Errorf("%s=issuer: %d %s", param, res.status, res.body)
		}
	}

	// Within the refresh margin of its expiry, the token is refreshed
	// upstream once; the refresh token rotates.
	h.clock.Advance(time.Hour - 10*time.Second)
	tok = h.refreshTokens(t, tok.RefreshToken)
	res = upstreamExchange(h, tok.AccessToken, nil)
	issued, refreshes := vt.state()
	if res.tok == nil || res.tok.AccessToken != issued[2] || refreshes != 1 {
		t.Fatalf("after expiry: %d %s (refreshes %d)", res.status, res.body, refreshes)
	}

	// Concurrent exchanges of an expired token share one refresh.
	h.clock.Advance(time.Hour)
	tok = h.refreshTokens(t, tok.RefreshToken)
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() {
			if r := upstreamExchange(h, tok.AccessToken, nil); r.tok != nil {
				got[i] = r.tok.AccessToken
			}
		})
	}
	wg.Wait()
	issued, refreshes = vt.state()
	for i, g := range got {
		if g != issued[4] {
			t.Errorf("exchange %d got %q, want the one refreshed token", i, g)
		}
	}
	if refreshes != 2 {
		t.Errorf("%d upstream refreshes, want 2", refreshes)
	}
	logs := h.logs.String()
	for _, s := range append(issued, tok.AccessToken, tok.RefreshToken) {
		if strings.Contains(logs, s) {
			t.Errorf("a token was logged: %.12s…", s)
		}
	}
}

// refreshTokens refreshes our tokens as the public client.
func (h *harness) refreshTokens(t *testing.T, rt string) *oauthmeta.TokenResponse {
	t.Helper()
	res := h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {publicID}}, "", "")
	if res.tok == nil {
		t.Fatalf("refresh: %d %s", res.status, res.body)
	}
	return res.tok
}

func TestTokenVaultExchangeRefused(t *testing.T) {
	h, _, _ := vaultHarness(t, time.Hour, nil)
	tok := vaultLogin(t, h, rsResource)
	other := vaultLogin(t, h, "https://other.example.com/mcp")
	for _, tc := range []struct {
		name    string
		subject string
		edit    func(url.Values)
		want    oauthmeta.ErrorCode
		status  int
	}{
		{"no client authentication", tok.AccessToken, func(f url.Values) { f.Set("user", ""); f.Set("client_id", rsID) },
			oauthmeta.CodeInvalidClient, 401},
		{"wrong secret", tok.AccessToken, func(f url.Values) { f.Set("user", rsID); f.Set("pass", "nope") },
			oauthmeta.CodeInvalidClient, 401},
		{"client is no resource server", tok.AccessToken, func(f url.Values) { f.Set("user", notRSID); f.Set("pass", "other-secret") },
			oauthmeta.CodeUnauthorizedClient, 400},
		{"public client", tok.AccessToken, func(f url.Values) { f.Set("user", ""); f.Set("client_id", publicID) },
			oauthmeta.CodeUnauthorizedClient, 400},
		{"token for another resource", other.AccessToken, nil, oauthmeta.CodeInvalidGrant, 400},
		{"not a token", "not-a-token", nil, oauthmeta.CodeInvalidGrant, 400},
		{"refresh token as subject", tok.RefreshToken, nil, oauthmeta.CodeInvalidGrant, 400},
		{"unknown audience", tok.AccessToken, func(f url.Values) { f.Set("audience", "github") }, oauthmeta.CodeInvalidTarget, 400},
		{"name as resource", tok.AccessToken, func(f url.Values) { f.Del("audience"); f.Set("resource", vaultAud) },
			oauthmeta.CodeInvalidTarget, 400},
		{"two audiences", tok.AccessToken, func(f url.Values) { f.Set("resource", rsResource) }, oauthmeta.CodeInvalidTarget, 400},
		{"no audience", tok.AccessToken, func(f url.Values) { f.Del("audience") }, oauthmeta.CodeInvalidRequest, 400},
		{"no subject token", "", nil, oauthmeta.CodeInvalidRequest, 400},
		{"ID token type", tok.AccessToken, func(f url.Values) { f.Set("subject_token_type", oauthmeta.TokenTypeIDToken) },
			oauthmeta.CodeInvalidRequest, 400},
		{"actor token", tok.AccessToken, func(f url.Values) { f.Set("actor_token", tok.AccessToken) }, oauthmeta.CodeInvalidRequest, 400},
		{"other requested type", tok.AccessToken, func(f url.Values) {
			f.Set("requested_token_type", "urn:ietf:params:oauth:token-type:refresh_token")
		}, oauthmeta.CodeInvalidRequest, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := upstreamExchange(h, tc.subject, tc.edit)
			if res.err == nil || res.err.Code != tc.want || res.status != tc.status || res.tok != nil {
				t.Fatalf("got %d %s, want %d %s", res.status, res.body, tc.status, tc.want)
			}
		})
	}
	if strings.Contains(h.logs.String(), tok.AccessToken) {
		t.Error("the subject token was logged")
	}
}

// TestTokenVaultRevocation: once our grant is revoked, or the subject
// token expires, the exchange fails; revocation deletes the upstream
// tokens.
func TestTokenVaultRevocation(t *testing.T) {
	h, _, _ := vaultHarness(t, time.Hour, nil)
	tok := vaultLogin(t, h, rsResource)
	if res := upstreamExchange(h, tok.AccessToken, nil); res.tok == nil {
		t.Fatalf("exchange: %d %s", res.status, res.body)
	}
	g := grantOf(t, h, tok.AccessToken)
	if _, err := h.store.UpstreamTokens.UpstreamTokens(context.Background(), g.UpstreamTokens); err != nil {
		t.Fatalf("vault record: %v", err)
	}
	if st := h.revoke(t, tok.RefreshToken, nil, "", ""); st != http.StatusOK {
		t.Fatalf("revoke: %d", st)
	}
	if res := upstreamExchange(h, tok.AccessToken, nil); res.err == nil || res.err.Code != oauthmeta.CodeInvalidGrant {
		t.Fatalf("after revocation: %d %s", res.status, res.body)
	}
	if _, err := h.store.UpstreamTokens.UpstreamTokens(context.Background(), g.UpstreamTokens); !errors.Is(err, authserver.ErrNotFound) {
		t.Fatalf("the revoked grant's upstream tokens are still stored: %v", err)
	}

	tok = vaultLogin(t, h, rsResource)
	h.clock.Advance(authserver.DefaultAccessTokenTTL)
	if res := upstreamExchange(h, tok.AccessToken, nil); res.err == nil || res.err.Code != oauthmeta.CodeInvalidGrant {
		t.Fatalf("expired subject token: %d %s", res.status, res.body)
	}
}

// TestTokenVaultUpstreamRefreshRefused: when the provider refuses the
// refresh, the upstream tokens are dropped and the exchange says
// invalid_grant (the user logs in again).
func TestTokenVaultUpstreamRefreshRefused(t *testing.T) {
	h, _, vt := vaultHarness(t, time.Minute, nil)
	tok := vaultLogin(t, h, rsResource)
	g := grantOf(t, h, tok.AccessToken)
	vt.mu.Lock()
	vt.refuse = true
	vt.mu.Unlock()
	h.clock.Advance(2 * time.Minute)
	if res := upstreamExchange(h, tok.AccessToken, nil); res.err == nil || res.err.Code != oauthmeta.CodeInvalidGrant {
		t.Fatalf("refused refresh: %d %s", res.status, res.body)
	}
	if _, err := h.store.UpstreamTokens.UpstreamTokens(context.Background(), g.UpstreamTokens); !errors.Is(err, authserver.ErrNotFound) {
		t.Fatalf("upstream tokens kept after a refused refresh: %v", err)
	}
}

// grantOf returns the stored grant of one of our access tokens.
func grantOf(t *testing.T, h *harness, access string) *authserver.Grant {
	t.Helper()
	_, claims := h.verifyJWT(access)
	jti, _ := claims["jti"].(string)
	id, _, _ := strings.Cut(jti, ".") // the grant's ID, then the token's
	g, err := h.store.Grants.Grant(context.Background(), id)
	if err != nil || g.UpstreamTokens == "" {
		t.Fatalf("grant %+v, %v", g, err)
	}
	return g
}

func TestTokenVaultMetadata(t *testing.T) {
	h, _, _ := vaultHarness(t, time.Hour, nil)
	if !slices.Contains(h.as.Metadata().GrantTypesSupported, oauthmeta.GrantTypeTokenExchange) {
		t.Error("grant_types_supported lacks token exchange")
	}
	plain, _ := upstreamHarness(t, nil)
	if slices.Contains(plain.as.Metadata().GrantTypesSupported, oauthmeta.GrantTypeTokenExchange) {
		t.Error("token exchange advertised without a vault")
	}
}

func TestTokenVaultConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		tv   tokenVaultConfig
	}{
		{"short key", tokenVaultConfig{Keys: [][]byte{[]byte("short")}}},
		{"unknown client", tokenVaultConfig{ResourceServers: map[string]string{"nobody": rsResource}}},
		{"public client", tokenVaultConfig{ResourceServers: map[string]string{publicID: rsResource}}},
		{"grant not allowed", tokenVaultConfig{ResourceServers: map[string]string{basicID: rsResource}}},
		{"bad resource", tokenVaultConfig{ResourceServers: map[string]string{rsID: "not a uri"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &harness{t: t, clock: newClock(), logs: &logBuffer{}, issuer: "http://127.0.0.1:1"}
			cfg := h.config()
			cfg.Consent = authserver.ConsentPrompt
			cfg.Clients = append(cfg.Clients, authserver.Client{ID: rsID, Secret: rsSecret, GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}})
			cfg.Upstream = &upstreamConfig{Issuer: "http://127.0.0.1:2", ClientID: "x", Allow: authserver.AllowList{AllowAnyUser: true},
				Fetch: authserver.KeyFetchConfig{InsecureAllowHTTPLoopback: true}}
			cfg.TokenVault = &tc.tv
			if _, _, err := newServer(t, cfg); !errors.Is(err, authserver.ErrConfig) {
				t.Fatalf("New = %v, want authserver.ErrConfig", err)
			}
		})
	}
	cfg := (&harness{clock: newClock(), logs: &logBuffer{}, issuer: "http://127.0.0.1:1"}).config()
	cfg.TokenVault = &tokenVaultConfig{}
	if _, _, err := newServer(t, cfg); !errors.Is(err, authserver.ErrConfig) {
		t.Fatalf("a vault without upstream: %v", err)
	}
}

// rawStores returns each store implementation with a function that reads
// what it holds as raw bytes: every record handed to the memory store, the
// bbolt file, the PostgreSQL tables.
func rawStores() map[string]func(t *testing.T) (authserver.Storage, func() [][]byte) {
	return map[string]func(t *testing.T) (authserver.Storage, func() [][]byte){
		"memory": func(*testing.T) (authserver.Storage, func() [][]byte) {
			rec := &recorder{}
			st := authserver.NewMemoryStore().Storage()
			st.UpstreamTokens = recordedVault{st.UpstreamTokens, rec}
			st.Grants = recordedGrants{st.Grants, rec}
			st.Codes = recordedCodes{st.Codes, rec}
			st.RefreshTokens = recordedRefresh{st.RefreshTokens, rec}
			st.Pending = recordedPending{st.Pending, rec}
			return st, rec.all
		},
		"bolt": func(t *testing.T) (authserver.Storage, func() [][]byte) {
			path := filepath.Join(t.TempDir(), "s.db")
			b := openTestBoltAt(t, path)
			return b.Storage(), func() [][]byte {
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				return [][]byte{raw}
			}
		},
		"postgres": func(t *testing.T) (authserver.Storage, func() [][]byte) {
			pg := testdb.StartPostgres(t)
			dbURL := pg.NewDatabase(t)
			st := openTestPostgres(t, pg, dbURL).Storage()
			return st, func() [][]byte {
				ctx := context.Background()
				conn, err := pgx.Connect(ctx, dbURL)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				var out [][]byte
				for _, q := range []string{
					"SELECT sealed FROM upstream_tokens", "SELECT data::text::bytea FROM grants",
					"SELECT data::text::bytea FROM codes", "SELECT data::text::bytea FROM pending_authorizations",
					"SELECT data::text::bytea FROM refresh_tokens",
				} {
					rows, err := conn.Query(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					for rows.Next() {
						var b []byte
						if err := rows.Scan(&b); err != nil {
							t.Fatal(err)
						}
						out = append(out, b)
					}
					rows.Close()
				}
				return out
			}
		},
	}
}

// recorder keeps, as JSON, every record handed to a store.
type recorder struct {
	mu   sync.Mutex
	recs [][]byte
}

func (r *recorder) add(v any) {
	b, _ := json.Marshal(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, b)
}

func (r *recorder) all() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

type recordedVault struct {
	authserver.UpstreamTokenStore
	r *recorder
}

func (s recordedVault) SaveUpstreamTokens(ctx context.Context, t *authserver.UpstreamTokens) error {
	s.r.add(t)
	s.r.add(t.Sealed)
	return s.UpstreamTokenStore.SaveUpstreamTokens(ctx, t)
}

type recordedGrants struct {
	authserver.GrantStore
	r *recorder
}

func (s recordedGrants) SaveGrant(ctx context.Context, g *authserver.Grant) error {
	s.r.add(g)
	return s.GrantStore.SaveGrant(ctx, g)
}

type recordedCodes struct {
	authserver.CodeStore
	r *recorder
}

func (s recordedCodes) SaveCode(ctx context.Context, c *authserver.Code) error {
	s.r.add(c)
	return s.CodeStore.SaveCode(ctx, c)
}

type recordedRefresh struct {
	authserver.RefreshTokenStore
	r *recorder
}

func (s recordedRefresh) SaveRefreshToken(ctx context.Context, t *authserver.RefreshToken) error {
	s.r.add(t)
	return s.RefreshTokenStore.SaveRefreshToken(ctx, t)
}

type recordedPending struct {
	authserver.PendingStore
	r *recorder
}

func (s recordedPending) SavePending(ctx context.Context, p *authserver.PendingAuthorization) error {
	s.r.add(p)
	return s.PendingStore.SavePending(ctx, p)
}

// TestTokenVaultSealedEveryStore: the upstream tokens are stored, in every
// backend, only sealed: no upstream access or refresh token appears in
// anything the store holds, and the exchange works from each.
func TestTokenVaultSealedEveryStore(t *testing.T) {
	for name, open := range rawStores() {
		t.Run(name, func(t *testing.T) {
			st, raw := open(t)
			h, _, vt := vaultHarness(t, time.Minute, func(c *testConfig) { c.Storage = st })
			tok := vaultLogin(t, h, rsResource)
			h.clock.Advance(2 * time.Minute) // refreshed: a second pair is sealed
			if res := upstreamExchange(h, tok.AccessToken, nil); res.tok == nil {
				t.Fatalf("exchange: %d %s", res.status, res.body)
			}
			issued, refreshes := vt.state()
			if refreshes != 1 || len(issued) != 4 {
				t.Fatalf("issued %d tokens, %d refreshes", len(issued), refreshes)
			}
			g := grantOf(t, h, tok.AccessToken)
			rec, err := st.UpstreamTokens.UpstreamTokens(context.Background(), g.UpstreamTokens)
			// Versions: kept, bound, leased, refreshed.
			if err != nil || rec.GrantID != g.ID || rec.Version != 4 || rec.LeaseOwner != "" || !rec.ExpiresAt.Equal(g.ExpiresAt) {
				t.Fatalf("record %+v, %v", rec, err)
			}
			dump := raw()
			if len(dump) == 0 {
				t.Fatal("nothing read from the store")
			}
			found := false
			for _, b := range dump {
				found = found || bytes.Contains(b, rec.Sealed) ||
					bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString(rec.Sealed)))
				for _, s := range issued {
					if bytes.Contains(b, []byte(s)) {
						t.Errorf("the store holds an upstream token in clear: %.10s…", s)
					}
				}
			}
			if !found {
				t.Error("the raw read did not see the sealed record; the check proves nothing")
			}
		})
	}
}

// TestTokenVaultKeys: a record opens only under a ring holding the key
// that sealed it and only for its own ID; a rotated ring still opens old
// records and seals new ones under the new key.
func TestTokenVaultKeys(t *testing.T) {
	ctx := context.Background()
	store := authserver.NewMemoryStore()
	mk := func(keys ...[]byte) *vault {
		ring, err := seal.NewRing(keys[0], keys[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		return &vault{ring: ring, store: store, ups: map[string]Provider{"https://idp.example": nil}, now: newClock().Now,
			log: slog.New(slog.DiscardHandler)}
	}
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	old := mk(k1)
	id, err := old.Keep(ctx, "https://idp.example", &oauth2.Token{AccessToken: "at-secret", RefreshToken: "rt-secret"}, newClock().Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	g := &authserver.Grant{ID: "g1", UpstreamTokens: id, ExpiresAt: newClock().Now().Add(time.Hour)}
	if err := old.Bind(ctx, id, g); err != nil {
		t.Fatal(err)
	}
	if err := old.Bind(ctx, id, &authserver.Grant{ID: "g2"}); err == nil {
		t.Error("a record bound to one grant was bound to another")
	}
	rotated := mk(k2, k1)
	if tok, err := rotated.Token(ctx, g, ""); err != nil || tok.AccessToken != "at-secret" {
		t.Fatalf("rotated ring: %+v, %v", tok, err)
	}
	id2, _ := rotated.Keep(ctx, "https://idp.example", &oauth2.Token{AccessToken: "new"}, g.ExpiresAt)
	rec2, _ := store.UpstreamTokens(ctx, id2)
	if _, err := old.ring.Open(rec2.Sealed, sealContext(id2)); err == nil {
		t.Error("a new record is still sealed under the old key")
	}
	if _, err := mk(k2).Token(ctx, g, ""); !errors.Is(err, errVaultEmpty) {
		t.Errorf("opened without the sealing key: %v", err)
	}
	// A sealed value moved to another record does not open there.
	rec, _ := store.UpstreamTokens(ctx, id)
	rec2.Sealed, rec2.GrantID, rec2.Version = rec.Sealed, "g3", rec2.Version+1
	if err := store.SaveUpstreamTokens(ctx, rec2); err != nil {
		t.Fatal(err)
	}
	if _, err := rotated.Token(ctx, &authserver.Grant{ID: "g3", UpstreamTokens: id2}, ""); !errors.Is(err, errVaultEmpty) {
		t.Errorf("a sealed value opened under another record's ID: %v", err)
	}
}
