package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/httpform"
	"github.com/mcpauth/mcpauth/internal/loadgen"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// floorPeer is the kind of `mcpauth-load peer` that runs the token
// endpoint floor -authservers measures as "floor":
//
//	mcpauth-load peer token-floor --addr 127.0.0.1:P
//
// It is what a token endpoint cannot go below on this stack: a plain
// net/http server on loopback (no router, no middleware, no logging, no
// limits) that per token request parses the form, checks the client (the
// SHA-256 of the secret compared in constant time, as mcpauth stores
// secrets), signs an ES256 RFC 9068 JWT with go-jose carrying the claims
// mcpauth's tokens carry (iss, sub, aud, client_id, scope, iat, exp, a
// jti of the same length) and writes the JSON answer with
// encoding/json. refresh_token rotates a random refresh token kept, by
// its SHA-256, in a bounded set (tokenGenerations); authorization_code redeems a code its
// /authorize handed out at once (no login or consent page: the code
// flow's floor is one redirect and one exchange) with PKCE S256.
const floorPeer = "token-floor"

// floorMaxTokens bounds the floor's codes and refresh tokens.
const floorMaxTokens = 1 << 16

// floorClaims are the claims of a floor access token, shaped like
// mcpauth's (authserver's accessClaims without the optional ones).
type floorClaims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Audience string `json:"aud"`
	ClientID string `json:"client_id"`
	Scope    string `json:"scope,omitempty"`
	IssuedAt int64  `json:"iat"`
	Expires  int64  `json:"exp"`
	JTI      string `json:"jti"`
}

type floorCode struct {
	challenge string
	expires   time.Time
}

// floorServer is the floor's state.
type floorServer struct {
	issuer     string
	signer     jose.Signer
	jwks       []byte
	secretHash [32]byte
	mu         sync.Mutex
	codes      map[[32]byte]floorCode
	refresh    tokenGenerations
}

func runFloorPeer(args []string, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "mcpauth-load peer token-floor:", err); return 1 }
	fs := flag.NewFlagSet("mcpauth-load peer token-floor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if host, _, err := net.SplitHostPort(*addr); err != nil || !oauthmeta.IsLoopbackHost(host) {
		return fail(fmt.Errorf("--addr %q: want a loopback address", *addr))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(err)
	}
	f, err := newFloorServer("http://" + ln.Addr().String())
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "listening on %s (token floor)\n", f.issuer)
	if err := servePeer(ctx, ln, f); err != nil {
		return fail(err)
	}
	return 0
}

// newFloorServer returns the floor of issuer with a new ES256 key.
func newFloorServer(issuer string) (*floorServer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "floor"))
	if err != nil {
		return nil, err
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "floor", Algorithm: "ES256", Use: "sig"}}})
	if err != nil {
		return nil, err
	}
	return &floorServer{issuer: issuer, signer: signer, jwks: jwks,
		secretHash: sha256.Sum256([]byte(asCCSecret)), codes: map[[32]byte]floorCode{}, refresh: newTokenGenerations(floorMaxTokens / 2)}, nil
}

func (f *floorServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/token" && r.Method == http.MethodPost:
		f.token(w, r)
	case r.URL.Path == "/authorize" && r.Method == http.MethodGet:
		f.authorize(w, r)
	case r.URL.Path == oauthmeta.WellKnownOAuthAuthorizationServer && r.Method == http.MethodGet:
		writeFloorJSON(w, http.StatusOK, map[string]string{"issuer": f.issuer, "jwks_uri": f.issuer + "/jwks",
			"token_endpoint": f.issuer + "/token", "authorization_endpoint": f.issuer + "/authorize"})
	case r.URL.Path == "/jwks" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(f.jwks)
	default:
		http.NotFound(w, r)
	}
}

// authorize hands out a code at once for the app client's redirect URI
// and an S256 challenge.
func (f *floorServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("client_id") != asApp || q.Get("redirect_uri") != asRedirect ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "invalid_request", http.StatusBadRequest)
		return
	}
	code := floorRandom(32)
	f.mu.Lock()
	full := len(f.codes) >= floorMaxTokens
	if !full {
		f.codes[sha256.Sum256([]byte(code))] = floorCode{challenge: q.Get("code_challenge"), expires: time.Now().Add(time.Minute)}
	}
	f.mu.Unlock()
	if full {
		http.Error(w, "temporarily_unavailable", http.StatusServiceUnavailable)
		return
	}
	v := url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {f.issuer}}
	http.Redirect(w, r, asRedirect+"?"+v.Encode(), http.StatusFound)
}

// token is the floor's token endpoint.
func (f *floorServer) token(w http.ResponseWriter, r *http.Request) {
	form, err := httpform.Post(w, r, 64<<10)
	if err != nil {
		floorError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	now := time.Now()
	var sub, client, refresh string
	switch form.Get("grant_type") {
	case "client_credentials":
		id, secret, ok := r.BasicAuth()
		if ok {
			id, _ = url.QueryUnescape(id)
			secret, _ = url.QueryUnescape(secret)
		}
		sum := sha256.Sum256([]byte(secret))
		if !ok || id != asCCClient || subtle.ConstantTimeCompare(sum[:], f.secretHash[:]) != 1 {
			floorError(w, http.StatusUnauthorized, "invalid_client")
			return
		}
		if form.Get("scope") != asScope {
			floorError(w, http.StatusBadRequest, "invalid_scope")
			return
		}
		sub, client = asCCClient, asCCClient
	case "refresh_token":
		if form.Get("client_id") != asApp {
			floorError(w, http.StatusUnauthorized, "invalid_client")
			return
		}
		k := sha256.Sum256([]byte(form.Get("refresh_token")))
		refresh = floorRandom(32)
		f.mu.Lock()
		ok := f.refresh.take(k)
		if ok {
			f.refresh.add(sha256.Sum256([]byte(refresh)))
		}
		f.mu.Unlock()
		if !ok {
			floorError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		sub, client = floorUser, asApp
	case "authorization_code":
		if form.Get("client_id") != asApp || form.Get("redirect_uri") != asRedirect {
			floorError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		k := sha256.Sum256([]byte(form.Get("code")))
		refresh = floorRandom(32)
		f.mu.Lock()
		c, ok := f.codes[k]
		delete(f.codes, k)
		if ok {
			f.refresh.add(sha256.Sum256([]byte(refresh)))
		}
		f.mu.Unlock()
		if !ok || now.After(c.expires) || !pkce.Verify(form.Get("code_verifier"), c.challenge) {
			floorError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		sub, client = floorUser, asApp
	default:
		floorError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	payload, err := json.Marshal(floorClaims{Issuer: f.issuer, Subject: sub, Audience: f.issuer, ClientID: client, Scope: asScope,
		IssuedAt: now.Unix(), Expires: now.Add(time.Hour).Unix(), JTI: floorRandom(16) + "." + floorRandom(12)})
	if err != nil {
		floorError(w, http.StatusInternalServerError, "server_error")
		return
	}
	jws, err := f.signer.Sign(payload)
	if err != nil {
		floorError(w, http.StatusInternalServerError, "server_error")
		return
	}
	access, err := jws.CompactSerialize()
	if err != nil {
		floorError(w, http.StatusInternalServerError, "server_error")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeFloorJSON(w, http.StatusOK, oauthmeta.TokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: 3600,
		RefreshToken: refresh, Scope: asScope})
}

// floorUser is the subject of the floor's code-flow tokens.
const floorUser = "demo-user"

func floorError(w http.ResponseWriter, status int, code string) {
	writeFloorJSON(w, status, map[string]string{"error": code})
}

func writeFloorJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func floorRandom(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// startFloor runs the floor as a process of its own: this program,
// re-executed as `mcpauth-load peer token-floor`.
func (a *authServer) startFloor(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child, err := loadgen.StartCommand(ctx, loadgen.CommandConfig{Binary: self, Args: []string{peerCommand, floorPeer, "--addr", "127.0.0.1:0"}})
	if err != nil {
		return err
	}
	a.child = child
	f := strings.Fields(child.Ready)
	if len(f) < 3 {
		return fmt.Errorf("unexpected ready line %q", child.Ready)
	}
	a.issuer = f[2]
	a.tokenURL, a.authorizeURL = a.issuer+"/token", a.issuer+"/authorize"
	a.ccSecret, a.ccScope, a.authScope = asCCSecret, asScope, asScope
	a.user = floorUser
	a.ccAuthHasher = "SHA-256"
	return nil
}

// tokenGenerations is the floor's bounded set of refresh tokens: two
// generations of at most n each. A token is added to the current one;
// when it is full, it becomes the previous one and the previous one is
// dropped, so the tokens the workers rotate (each used again within
// milliseconds) stay while the ones logins leave behind, never used,
// age out.
type tokenGenerations struct {
	n             int
	cur, previous map[[32]byte]bool
}

func newTokenGenerations(n int) tokenGenerations {
	return tokenGenerations{n: n, cur: map[[32]byte]bool{}, previous: map[[32]byte]bool{}}
}

func (g *tokenGenerations) add(k [32]byte) {
	if len(g.cur) >= g.n {
		g.previous, g.cur = g.cur, make(map[[32]byte]bool, g.n)
	}
	g.cur[k] = true
}

// take removes k and reports whether it was there.
func (g *tokenGenerations) take(k [32]byte) bool {
	if g.cur[k] {
		delete(g.cur, k)
		return true
	}
	if g.previous[k] {
		delete(g.previous, k)
		return true
	}
	return false
}
