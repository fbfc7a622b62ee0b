//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/pkce"
)

// hydraBinary is where `make hydra` (mk/hydra.mk) builds Ory Hydra v2.3.0,
// relative to this package.
const hydraBinary = "../../tools/hydra/bin/hydra"

// hydraUser is the subject our login app logs in.
const hydraUser = "alice@example.com"

// hydra is one Ory Hydra v2.3.0 process, in memory, with JWT access
// tokens, its public and admin APIs on loopback ports, and our login and
// consent app in front of its admin API.
type hydra struct {
	issuer, admin string
	app           *httptest.Server
	cmd           *exec.Cmd
	log           syncBuffer
	done          chan struct{}
	hc            *http.Client
}

// needHydra returns the Hydra binary, or skips t when it is absent outside
// CI; under CI (and so under `make test`, which builds it first) a missing
// binary fails the test.
func needHydra(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(hydraBinary)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: `make hydra` builds Ory Hydra from tools/hydra (make e2e does it first)", err)
		}
		t.Skipf("Ory Hydra is not built (%v): run `make hydra` to build it from tools/hydra", err)
	}
	return bin
}

// freePort returns a loopback port that was free a moment ago (Hydra takes
// its ports from its configuration, not from a listener we could hand it).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startHydra runs `hydra serve all` with a configuration file in a temporary
// directory: DSN memory, JWT access tokens, the issuer its loopback public
// URL, login and consent at our app, no telemetry.
func startHydra(t *testing.T) *hydra {
	t.Helper()
	bin := needHydra(t)
	pub, adm := freePort(t), freePort(t)
	h := &hydra{
		issuer: "http://127.0.0.1:" + strconv.Itoa(pub),
		admin:  "http://127.0.0.1:" + strconv.Itoa(adm),
		done:   make(chan struct{}),
		// One connection per request: a POST on a connection Hydra is
		// closing as idle fails with EOF and is not retried.
		hc: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	t.Cleanup(h.hc.CloseIdleConnections)
	h.app = httptest.NewServer(http.HandlerFunc(h.serveApp))
	t.Cleanup(h.app.Close)
	cfg := map[string]any{
		"dsn": "memory",
		"serve": map[string]any{
			"public": map[string]any{"host": "127.0.0.1", "port": pub},
			"admin":  map[string]any{"host": "127.0.0.1", "port": adm},
		},
		"urls": map[string]any{
			"self":    map[string]any{"issuer": h.issuer},
			"login":   h.app.URL + "/login",
			"consent": h.app.URL + "/consent",
		},
		"strategies": map[string]any{"access_token": "jwt"},
		"secrets":    map[string]any{"system": []string{"this-is-the-e2e-system-secret-of-hydra"}},
		"log":        map[string]any{"level": "warn"},
	}
	dir := t.TempDir()
	data, _ := json.Marshal(cfg)
	conf := filepath.Join(dir, "hydra.json")
	if err := os.WriteFile(conf, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h.cmd = exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out", "--config", conf)
	h.cmd.Dir = dir
	h.cmd.Env = append(os.Environ(), "SQA_OPT_OUT=true")
	h.cmd.Stdout, h.cmd.Stderr = &h.log, &h.log
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		select {
		case <-h.done:
		default:
			_ = h.cmd.Process.Kill()
			<-h.done
		}
		if t.Failed() {
			t.Logf("hydra's log:\n%s", h.log.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if h.ready() {
			break
		}
		select {
		case <-h.done:
			t.Fatalf("hydra exited: %s", h.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("hydra not ready after 60s: %s", h.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Hydra generates its signing keys (RSA 4096) when they are first
	// needed; on a loaded machine that can take longer than the 10 s its
	// server gives a request (the connection is closed, EOF), and would
	// time out the first client's request. Ask for them now, again until
	// the generation has finished, and check that the server answering is
	// this Hydra.
	warm := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	var jwks struct {
		Keys []map[string]any `json:"keys"`
	}
	var disco struct {
		Issuer string `json:"issuer"`
	}
	for _, g := range []struct {
		path string
		out  any
	}{{"/.well-known/jwks.json", &jwks}, {"/.well-known/openid-configuration", &disco}} {
		for attempt := 1; ; attempt++ {
			resp, err := warm.Get(h.issuer + g.path)
			if err == nil {
				err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(g.out)
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err == nil {
				break
			}
			if attempt == 8 {
				t.Fatalf("hydra %s: %v; log: %s", g.path, err, h.log.String())
			}
			time.Sleep(time.Second)
		}
	}
	if len(jwks.Keys) < 2 || disco.Issuer != h.issuer {
		t.Fatalf("hydra: %d keys, issuer %q", len(jwks.Keys), disco.Issuer)
	}
	t.Logf("hydra ready; its keys generated in %v", time.Since(start).Round(time.Millisecond))
	return h
}

// ready: both APIs answer and the discovery document names the issuer.
func (h *hydra) ready() bool {
	for _, u := range []string{h.admin + "/health/ready", h.issuer + "/health/ready"} {
		resp, err := h.hc.Get(u)
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false
		}
	}
	return true
}

// do sends a JSON request to Hydra and decodes a JSON answer into out,
// failing t unless the status is want.
func (h *hydra) do(t *testing.T, method, u string, body, out any, want int) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, u, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s", method, u, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, u, err, data)
		}
	}
}

// hydraClient is an OAuth 2.0 client registered through Hydra's admin API.
type hydraClient struct {
	ID     string `json:"client_id"`
	Secret string `json:"client_secret"`
}

// createClient registers a client through the admin API. fields are
// Hydra's client fields (grant_types, scope, audience, redirect_uris,
// token_endpoint_auth_method, ...).
func (h *hydra) createClient(t *testing.T, fields map[string]any) hydraClient {
	t.Helper()
	var c hydraClient
	h.do(t, http.MethodPost, h.admin+"/admin/clients", fields, &c, http.StatusCreated)
	if c.ID == "" {
		t.Fatal("hydra created a client without client_id")
	}
	return c
}

// hydraTokens is a token response of Hydra's.
type hydraTokens struct {
	AccessToken string `json:"access_token"`
	IDToken     string `json:"id_token"`
	Scope       string `json:"scope"`
	TokenType   string `json:"token_type"`
}

// token posts form to Hydra's token endpoint as c (client_secret_basic
// when c has a secret).
func (h *hydra) token(t *testing.T, c hydraClient, form url.Values) hydraTokens {
	t.Helper()
	if c.Secret == "" {
		form.Set("client_id", c.ID)
	}
	req, _ := http.NewRequest(http.MethodPost, h.issuer+"/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.Secret != "" {
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tok hydraTokens
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("token %s: %d %s", form.Get("grant_type"), resp.StatusCode, data)
	}
	return tok
}

// clientCredentials gets a client-credentials token for scope and audience.
func (h *hydra) clientCredentials(t *testing.T, c hydraClient, scope, audience string) hydraTokens {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}
	if audience != "" {
		form.Set("audience", audience)
	}
	return h.token(t, c, form)
}

// authorizationCode runs the authorization-code flow with PKCE for c the
// way a browser would, through our login and consent app, and redeems the
// code.
func (h *hydra) authorizationCode(t *testing.T, c hydraClient, redirectURI, scope, audience string) hydraTokens {
	t.Helper()
	verifier := pkce.GenerateVerifier()
	state := pkce.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {redirectURI}, "scope": {scope},
		"state": {state}, "code_challenge": {pkce.Challenge(verifier)}, "code_challenge_method": {"S256"}, "audience": {audience}}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second, Transport: &http.Transport{},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), redirectURI) || len(via) > 10 {
				return http.ErrUseLastResponse
			}
			return nil
		}}
	defer browser.CloseIdleConnections()
	resp, err := browser.Get(h.issuer + "/oauth2/auth?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || !strings.HasPrefix(loc.String(), redirectURI) {
		t.Fatalf("authorization: %d %v %s", resp.StatusCode, err, body)
	}
	if loc.Query().Get("state") != state || loc.Query().Get("code") == "" {
		t.Fatalf("authorization response: %s", loc.Redacted())
	}
	return h.token(t, c, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {redirectURI}, "code_verifier": {verifier}})
}

// serveApp is our login and consent app: it logs hydraUser in for every
// login challenge and grants every consent challenge the scopes and
// audiences requested, through Hydra's admin API, then sends the browser
// on to where Hydra says.
func (h *hydra) serveApp(w http.ResponseWriter, r *http.Request) {
	var redirect struct {
		RedirectTo string `json:"redirect_to"`
	}
	var err error
	switch r.URL.Path {
	case "/login":
		challenge := r.URL.Query().Get("login_challenge")
		err = h.admin2(http.MethodPut, "/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(challenge),
			map[string]any{"subject": hydraUser, "remember": false}, &redirect)
	case "/consent":
		challenge := r.URL.Query().Get("consent_challenge")
		var req struct {
			Scope    []string `json:"requested_scope"`
			Audience []string `json:"requested_access_token_audience"`
		}
		if err = h.admin2(http.MethodGet, "/admin/oauth2/auth/requests/consent?consent_challenge="+url.QueryEscape(challenge), nil, &req); err == nil {
			err = h.admin2(http.MethodPut, "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+url.QueryEscape(challenge),
				map[string]any{"grant_scope": req.Scope, "grant_access_token_audience": req.Audience, "remember": false,
					"session": map[string]any{"id_token": map[string]any{"email": hydraUser}}}, &redirect)
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil || redirect.RedirectTo == "" {
		http.Error(w, fmt.Sprintf("login app: %v", err), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, redirect.RedirectTo, http.StatusFound)
}

// admin2 is do for the login app, which has no *testing.T.
func (h *hydra) admin2(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, h.admin+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return json.Unmarshal(data, out)
}

// jwtPart decodes part i (0 header, 1 claims) of a compact JWT.
func jwtPart(t *testing.T, tok string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT (%d parts)", len(parts))
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
