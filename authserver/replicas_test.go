package authserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// replicaHeader pins a request to one replica behind the test front end;
// without it the front end goes round-robin.
const replicaHeader = "X-Test-Replica"

// replicas is a harness whose issuer is a round-robin front end over n
// servers sharing one store and one clock.
type replicas struct {
	*harness
	servers []*Server
	hits    []atomic.Int64
	next    atomic.Uint64
}

// newReplicas starts n servers on one PostgreSQL database, each through
// its own connection pool.
func newReplicas(t *testing.T, n int, pg *testdb.Postgres, mutate func(*Config)) *replicas {
	t.Helper()
	dbURL := pg.NewDatabase(t)
	return newReplicasWith(t, n, func() Storage { return openTestPostgres(t, pg, dbURL) }, mutate)
}

// newReplicasWith starts n servers, each on the Storage that storage
// returns when called for it.
func newReplicasWith(t *testing.T, n int, storage func() Storage, mutate func(*Config)) *replicas {
	t.Helper()
	r := &replicas{harness: &harness{t: t, clock: newClock(), logs: &logBuffer{}}, hits: make([]atomic.Int64, n)}
	h := r.harness
	h.srv = httptest.NewUnstartedServer(nil)
	h.issuer = "http://" + h.srv.Listener.Addr().String()
	for range n {
		cfg := h.config()
		cfg.Storage = storage()
		if mutate != nil {
			mutate(&cfg)
		}
		as, err := New(cfg)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = as.Close() })
		r.servers = append(r.servers, as)
	}
	h.as = r.servers[0]
	h.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		i := int(r.next.Add(1)-1) % n
		if v := req.Header.Get(replicaHeader); v != "" {
			i, _ = strconv.Atoi(v)
		}
		r.hits[i].Add(1)
		rec := httptest.NewRecorder()
		r.servers[i].ServeHTTP(rec, req)
		if rec.Code == http.StatusInternalServerError {
			t.Errorf("replica %d answered %s %s with 500: %s", i, req.Method, req.URL.Path, rec.Body)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
	h.srv.Start()
	t.Cleanup(h.srv.Close)
	h.http = &http.Client{
		Transport:     ownTransport(t),
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return r
}

// at returns headers that pin a request to replica i.
func at(i int) http.Header { return http.Header{replicaHeader: {strconv.Itoa(i)}} }

// tokenAt sends a token request to replica i.
func (r *replicas) tokenAt(i int, form url.Values) tokenResult {
	r.t.Helper()
	return r.tokenHeader(form, "", "", at(i))
}

func refreshForm(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {publicID}}
}

func codeForm(code, verifier string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"client_id": {publicID}, "redirect_uri": {publicCB}}
}

// introspectAt asks replica i about token.
func (r *replicas) introspectAt(i int, token string) bool {
	r.t.Helper()
	resp, body := r.postHeader(pathIntrospect, url.Values{"token": {token}}, basicID, basicSecret, at(i))
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("introspect at %d: %d %s", i, resp.StatusCode, body)
	}
	m := map[string]any{}
	if err := json.Unmarshal(body, &m); err != nil {
		r.t.Fatal(err)
	}
	return m["active"] == true
}

// TestReplicasLoginRoundRobin: each request of a login reaches another
// replica (authorize at A, the consent POST at B, the token request at C,
// the refresh at A) and the login completes; the tokens verify against
// the key set any replica publishes.
func TestReplicasLoginRoundRobin(t *testing.T) {
	pg := testdb.StartPostgres(t)
	r := newReplicas(t, 3, pg, func(c *Config) { c.Consent = ConsentPrompt })
	b := newBrowser(t, r.harness)
	q, v := authParams(publicID, publicCB)
	q.Set("scope", "mcp:read")
	r.next.Store(0)
	resp, _, form := b.page(q) // A
	if resp.StatusCode != http.StatusOK || form.Get("request") == "" {
		t.Fatalf("consent page: %d %v", resp.StatusCode, form)
	}
	form.Set("action", "approve")
	resp = b.submit(form, nil) // B
	loc := location(t, resp)
	code := loc.Query().Get("code")
	if code == "" {
		t.Fatalf("consent POST at another replica: %s", loc)
	}
	res := r.token(codeForm(code, v), "", "") // C
	if res.status != http.StatusOK || res.tok.RefreshToken == "" {
		t.Fatalf("token at a third replica: %d %s", res.status, res.body)
	}
	ref := r.token(refreshForm(res.tok.RefreshToken), "", "") // A
	if ref.status != http.StatusOK {
		t.Fatalf("refresh back at the first replica: %d %s", ref.status, ref.body)
	}
	for i, n := range []int64{2, 1, 1} {
		if got := r.hits[i].Load(); got != n {
			t.Errorf("replica %d served %d requests, want %d", i, got, n)
		}
	}
	for _, tok := range []string{res.tok.AccessToken, ref.tok.AccessToken} {
		r.verifyJWT(tok)
		for i := range r.servers {
			if !r.introspectAt(i, tok) {
				t.Errorf("replica %d: access token inactive", i)
			}
		}
	}
}

// TestReplicasCodeRace: 200 times, one code is redeemed at two replicas
// at the same moment. Exactly one redemption succeeds, the other gets
// invalid_grant, and the replay revokes what the first produced.
func TestReplicasCodeRace(t *testing.T) {
	pg := testdb.StartPostgres(t)
	r := newReplicas(t, 2, pg, nil)
	for round := range 200 {
		q, v := authParams(publicID, publicCB)
		code := r.code(q, v)
		var results [2]tokenResult
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				results[i] = r.tokenAt(i, codeForm(code, v))
			})
		}
		close(start)
		wg.Wait()
		var won *tokenResult
		for i := range results {
			switch res := &results[i]; {
			case res.status == http.StatusOK:
				if won != nil {
					t.Fatalf("round %d: both replicas redeemed the code", round)
				}
				won = res
			case res.err == nil || res.err.Code != oauthmeta.CodeInvalidGrant:
				t.Fatalf("round %d: replica %d: %d %s", round, i, res.status, res.body)
			}
		}
		if won == nil {
			t.Fatalf("round %d: neither replica redeemed the code", round)
		}
		if ref := r.tokenAt(round%2, refreshForm(won.tok.RefreshToken)); ref.status == http.StatusOK {
			t.Fatalf("round %d: the refresh token from a replayed code still works", round)
		}
	}
}

// TestPostgresRefreshConcurrent: on one replica, many concurrent refreshes
// of distinct tokens all rotate, each into its own successor; many
// concurrent refreshes of one token make one winner, and the others, seen
// as reuse, revoke the family (the winner's token is refused after).
func TestPostgresRefreshConcurrent(t *testing.T) {
	t.Parallel()
	pg := testdb.StartPostgres(t)
	r := newReplicas(t, 1, pg, nil)
	const n = 48
	{ // distinct tokens
		rts := make([]string, n)
		for i := range rts {
			rts[i] = r.tokens(nil).RefreshToken
		}
		results := make([]tokenResult, n)
		var wg sync.WaitGroup
		for i, rt := range rts {
			wg.Go(func() { results[i] = r.tokenAt(0, refreshForm(rt)) })
		}
		wg.Wait()
		seen := map[string]bool{}
		for i, res := range results {
			if res.status != http.StatusOK || res.tok.RefreshToken == "" || seen[res.tok.RefreshToken] {
				t.Fatalf("refresh %d: %d %s", i, res.status, res.body)
			}
			seen[res.tok.RefreshToken] = true
		}
		for i, res := range results[:4] {
			if again := r.tokenAt(0, refreshForm(res.tok.RefreshToken)); again.status != http.StatusOK {
				t.Fatalf("successor %d: %d %s", i, again.status, again.body)
			}
		}
	}
	{ // one token
		rt := r.tokens(nil).RefreshToken
		results := make([]tokenResult, n)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() { results[i] = r.tokenAt(0, refreshForm(rt)) })
		}
		wg.Wait()
		var winner string
		for _, res := range results {
			switch res.status {
			case http.StatusOK:
				if winner != "" {
					t.Fatal("two uses of one refresh token succeeded")
				}
				winner = res.tok.RefreshToken
			default:
				wantError(t, res, http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
			}
		}
		if winner == "" {
			t.Fatal("no use of the refresh token succeeded")
		}
		wantError(t, r.tokenAt(0, refreshForm(winner)), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	}
}

// TestReplicasRefreshReuse: a refresh token used again at another replica
// after rotation kills the whole family, everywhere.
func TestReplicasRefreshReuse(t *testing.T) {
	pg := testdb.StartPostgres(t)
	r := newReplicas(t, 3, pg, nil)
	tok := r.tokens(nil)
	next := r.tokenAt(0, refreshForm(tok.RefreshToken))
	if next.status != http.StatusOK {
		t.Fatalf("rotation: %d %s", next.status, next.body)
	}
	wantError(t, r.tokenAt(1, refreshForm(tok.RefreshToken)), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	wantError(t, r.tokenAt(2, refreshForm(next.tok.RefreshToken)), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	for i := range r.servers {
		if r.introspectAt(i, next.tok.AccessToken) {
			t.Errorf("replica %d: an access token of the dead family is active", i)
		}
	}
}

// TestReplicasRevocation: a token revoked at one replica is inactive at
// every other.
func TestReplicasRevocation(t *testing.T) {
	pg := testdb.StartPostgres(t)
	r := newReplicas(t, 3, pg, nil)
	a, b := r.tokens(nil), r.tokens(nil)
	for _, tok := range []string{a.AccessToken, b.RefreshToken} {
		resp, body := r.postHeader(pathRevoke, url.Values{"token": {tok}, "client_id": {publicID}}, "", "", at(0))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke: %d %s", resp.StatusCode, body)
		}
	}
	for i := 1; i < 3; i++ {
		if r.introspectAt(i, a.AccessToken) {
			t.Errorf("replica %d: revoked access token active", i)
		}
		if r.introspectAt(i, b.AccessToken) {
			t.Errorf("replica %d: access token of a revoked refresh token's grant active", i)
		}
		wantError(t, r.tokenAt(i, refreshForm(b.RefreshToken)), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	}
}

// TestReplicasKeyRotation: one replica rotates the signing key; within
// KeyReloadInterval every replica publishes it, before it signs, so a
// token from any replica verifies against the key set from any replica at
// every step, and at a resource server (package resource, what `mcpauth
// protect` runs) that fetches the key set through the front end.
func TestReplicasKeyRotation(t *testing.T) {
	pg := testdb.StartPostgres(t)
	r := newReplicas(t, 3, pg, nil)
	rs, err := resource.New(resource.Config{
		Resource: r.issuer, Issuers: []resource.Issuer{{Issuer: r.issuer}},
		InsecureAllowHTTPLoopback: true, Now: r.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })
	protected := httptest.NewServer(rs.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	})))
	t.Cleanup(protected.Close)
	atResource := func(tok string) int {
		req, _ := http.NewRequest(http.MethodPost, protected.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := r.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	check := func(step string) {
		t.Helper()
		for i := range r.servers {
			res := r.tokenAt(i, refreshForm(r.tokens(nil).RefreshToken))
			if res.status != http.StatusOK {
				t.Fatalf("%s: token at %d: %d %s", step, i, res.status, res.body)
			}
			for j := range r.servers {
				if !verifiesWith(t, res.tok.AccessToken, r.jwksAt(j)) {
					t.Fatalf("%s: a token from replica %d does not verify against replica %d's key set", step, i, j)
				}
			}
			if status := atResource(res.tok.AccessToken); status != http.StatusOK {
				t.Fatalf("%s: a token from replica %d refused at the resource server: %d", step, i, status)
			}
		}
	}
	check("before rotation")
	kids := func(i int) int { return len(r.jwksAt(i).Keys) }
	if err := r.servers[0].RotateSigningKey(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("just after rotation")
	r.clock.Advance(defaultKeyReloadInterval + time.Second)
	for i := range r.servers {
		if kids(i) != 2 {
			t.Fatalf("replica %d publishes %d keys one reload interval after the rotation, want 2", i, kids(i))
		}
	}
	check("after one reload interval")
	r.clock.Advance(defaultKeyPrePublish)
	check("after the new key started signing")
	r.clock.Advance(DefaultAccessTokenTTL + defaultKeyReloadInterval + 2*time.Minute)
	check("after the old key's tokens expired")
	for i := range r.servers {
		if kids(i) != 1 {
			t.Errorf("replica %d still publishes %d keys", i, kids(i))
		}
	}
}

// jwksAt fetches the key set replica i publishes.
func (r *replicas) jwksAt(i int) jose.JSONWebKeySet {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.url(pathJWKS), nil)
	req.Header = at(i)
	resp, err := r.http.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		r.t.Fatal(err)
	}
	return set
}

// verifiesWith reports whether raw's signature verifies with the key set
// entry its kid names.
func verifiesWith(t *testing.T, raw string, set jose.JSONWebKeySet) bool {
	t.Helper()
	jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		return false
	}
	_, err = jws.Verify(keys[0])
	return err == nil
}

// TestReplicasDatabaseRestart: PostgreSQL stops while clients refresh
// their tokens at every replica. While it is down every answer that needs
// it is 503 temporarily_unavailable (never a 500, never a wrong answer),
// the key set and metadata are still served; once it is back every grant
// issued before the restart still refreshes.
func TestReplicasDatabaseRestart(t *testing.T) {
	pg := testdb.StartPostgres(t)
	r := newReplicas(t, 3, pg, func(c *Config) { c.Consent = ConsentPrompt })
	const workers = 6
	b := newBrowser(t, r.harness)
	rts := make([]string, workers)
	for i := range rts {
		q, v := authParams(publicID, publicCB)
		_, _, form := b.page(q)
		form.Set("action", "approve")
		res := r.token(codeForm(location(t, b.submit(form, nil)).Query().Get("code"), v), "", "")
		if res.status != http.StatusOK {
			t.Fatalf("login: %d %s", res.status, res.body)
		}
		rts[i] = res.tok.RefreshToken
	}
	q, v := authParams(publicID, publicCB)
	_, _, pending := b.page(q) // a login in progress across the restart

	var stop atomic.Bool
	var statuses sync.Map // status -> *atomic.Int64
	count := func(s int) {
		n, _ := statuses.LoadOrStore(s, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for !stop.Load() {
				res := r.tokenAt(w%3, refreshForm(rts[w]))
				count(res.status)
				switch {
				case res.status == http.StatusOK:
					rts[w] = res.tok.RefreshToken
				case res.status == http.StatusServiceUnavailable && res.err != nil && res.err.Code == oauthmeta.CodeTemporarilyUnavailable:
					time.Sleep(20 * time.Millisecond)
				default:
					t.Errorf("worker %d: %d %s", w, res.status, res.body)
					return
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	pg.Stop()

	// Every endpoint that needs the database says so with a 503.
	for i := range r.servers {
		res := r.tokenAt(i, codeForm("unknown-code", v))
		wantError(t, res, http.StatusServiceUnavailable, oauthmeta.CodeTemporarilyUnavailable)
		resp, body := r.postHeader(pathIntrospect, url.Values{"token": {rts[0]}}, basicID, basicSecret, at(i))
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("introspection at %d with the database down: %d %s", i, resp.StatusCode, body)
		}
		resp, body = r.postHeader(pathRevoke, url.Values{"token": {rts[0]}, "client_id": {publicID}}, "", "", at(i))
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("revocation at %d with the database down: %d %s", i, resp.StatusCode, body)
		}
		req, _ := http.NewRequest(http.MethodPost, r.url(pathRegister),
			strings.NewReader(`{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none"}`))
		req.Header = at(i)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := r.http.Do(req); err != nil {
			t.Fatal(err)
		} else if resp.Body.Close(); resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("registration at %d with the database down: %d", i, resp.StatusCode)
		}
		if set := r.jwksAt(i); len(set.Keys) == 0 {
			t.Errorf("replica %d publishes no keys with the database down", i)
		}
	}
	q2, _ := authParams(publicID, publicCB)
	if resp := r.authorize(q2); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("authorization request with the database down: %d", resp.StatusCode)
	}
	time.Sleep(300 * time.Millisecond)
	pg.Restart()
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()

	for w, rt := range rts {
		if res := r.tokenAt(w%3, refreshForm(rt)); res.status != http.StatusOK {
			t.Errorf("worker %d's grant does not refresh after the restart: %d %s", w, res.status, res.body)
		}
	}
	pending.Set("action", "approve")
	if code := location(t, b.submit(pending, nil)).Query().Get("code"); code == "" {
		t.Error("the login started before the restart does not complete")
	}
	statuses.Range(func(k, v any) bool {
		t.Logf("status %d: %d answers", k, v.(*atomic.Int64).Load())
		return true
	})
	if n, ok := statuses.Load(http.StatusServiceUnavailable); !ok || n.(*atomic.Int64).Load() == 0 {
		t.Error("no 503 while the database was down: the test did not exercise the outage")
	}
}
