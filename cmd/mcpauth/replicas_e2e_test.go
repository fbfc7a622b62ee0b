//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/pkce"
)

// frontEnd is a round-robin load balancer in front of authorization
// server replicas: each request goes to the next replica, skipping one
// that refuses the connection (as a load balancer's health check would).
// X-Test-Replica pins a request to one replica.
type frontEnd struct {
	t        *testing.T
	srv      *httptest.Server
	backends []string
	hits     []atomic.Int64
	next     atomic.Uint64
	rt       http.RoundTripper
	mu       sync.Mutex
	fivexx   []string
}

func newFrontEnd(t *testing.T) *frontEnd {
	f := &frontEnd{t: t, rt: &http.Transport{DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *frontEnd) url() string { return "http://" + f.srv.Listener.Addr().String() }

func (f *frontEnd) start(backends []string) {
	f.backends, f.hits = backends, make([]atomic.Int64, len(backends))
	f.srv.Start()
}

func (f *frontEnd) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	order := make([]int, 0, len(f.backends))
	if v := r.Header.Get("X-Test-Replica"); v != "" {
		i, _ := strconv.Atoi(v)
		order = append(order, i)
	} else {
		first := int(f.next.Add(1)-1) % len(f.backends)
		for k := range f.backends {
			order = append(order, (first+k)%len(f.backends))
		}
	}
	for _, i := range order {
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, f.backends[i]+r.URL.RequestURI(), bytes.NewReader(body))
		out.Header = r.Header.Clone()
		resp, err := f.rt.RoundTrip(out)
		if err != nil {
			continue // the replica is down: try the next
		}
		defer resp.Body.Close()
		f.hits[i].Add(1)
		if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
			f.mu.Lock()
			f.fivexx = append(f.fivexx, r.Method+" "+r.URL.Path+" "+resp.Status)
			f.mu.Unlock()
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return
	}
	http.Error(w, "no replica answers", http.StatusBadGateway)
}

// TestE2EReplicasLogin: three `mcpauth authserver` processes on one
// PostgreSQL behind a round-robin front end, `protect` trusting the front
// end's issuer. The mcpauth client (login, call) and the go-sdk client
// log in with each request on another replica; a login whose code was
// issued by a replica that is then killed with SIGKILL completes on the
// others; no replica ever answers 500.
// (Not parallel: the database URL and key reach the replicas through
// the environment, as an operator would pass them.)
func TestE2EReplicasLogin(t *testing.T) {
	pg := testdb.StartPostgres(t)
	t.Setenv("MCPAUTH_E2E_DB", pg.NewDatabase(t))
	t.Setenv("MCPAUTH_E2E_KEK", "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=")
	front := newFrontEnd(t)
	issuer := front.url()
	const redirect = "http://127.0.0.1:1/callback"
	var procs []*proc
	var backends []string
	for range 3 {
		p := startProc(t, "authserver", "--addr", "127.0.0.1:0", "--issuer", issuer, "--insecure-http", "--consent", "auto",
			"--scopes", "mcp:tools mcp:admin", "--database-url", "env:MCPAUTH_E2E_DB", "--key-encryption-key", "env:MCPAUTH_E2E_KEK",
			"--client", "id=app,redirect="+redirect)
		procs = append(procs, p)
		backends = append(backends, firstURL.FindStringSubmatch(p.ready)[1])
	}
	front.start(backends)
	up := newUpstream(t)
	protect := startProc(t, "protect", "--addr", "127.0.0.1:0", "--upstream", up.srv.URL+"/mcp", "--issuer", issuer,
		"--insecure-http", "--scopes", "mcp:tools mcp:admin", "--require", "mcp:tools")
	mcpURL := firstURL.FindStringSubmatch(protect.ready)[1] + "/mcp"

	// The mcpauth client: discovery, registration, authorization and token
	// each land on the next replica.
	flags := []string{"--insecure-http", "--browser", "http", "--store", filepath.Join(t.TempDir(), "tokens.json")}
	if code, out, errOut := runBin(t, "", append(append([]string{"login"}, flags...), mcpURL)...); code != 0 || !strings.Contains(out, "logged in") {
		t.Fatalf("login: %d %s %s", code, out, errOut)
	}
	code, out, errOut := runBin(t, "", append(append([]string{"call"}, flags...), mcpURL, "echo", "--args", `{"message":"replicated"}`)...)
	if code != 0 || !strings.Contains(out, "replicated") {
		t.Fatalf("call: %d %s %s", code, out, errOut)
	}
	for i := range front.hits {
		if front.hits[i].Load() == 0 {
			t.Errorf("replica %d served nothing: the login did not spread", i)
		}
	}

	// The go-sdk client with the mcpauth OAuth handler.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(client.Config{Authorizer: &client.FollowRedirects{}, InsecureAllowHTTPLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	h, err := c.OAuthHandler(mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: mcpURL, OAuthHandler: h, HTTPClient: &http.Client{Timeout: 30 * time.Second}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "go-sdk"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "go-sdk") {
		t.Fatalf("go-sdk call: %+v %v", res, err)
	}
	session.Close()

	// Mid-login: replica 0 issues the code, then dies.
	hc := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	v := pkce.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "state": {"s"}, "redirect_uri": {redirect},
		"code_challenge": {pkce.Challenge(v)}, "code_challenge_method": {"S256"}, "scope": {"mcp:tools"}, "resource": {mcpURL}}
	req, _ := http.NewRequest(http.MethodGet, issuer+"/authorize?"+q.Encode(), nil)
	req.Header.Set("X-Test-Replica", "0")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	authCode := loc.Query().Get("code")
	if authCode == "" {
		t.Fatalf("authorize at replica 0: %d %s", resp.StatusCode, loc)
	}
	procs[0].signal(t, syscall.SIGKILL)
	token := func(form url.Values) map[string]any {
		t.Helper()
		resp, err := hc.PostForm(issuer+"/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("token after replica 0 died: %d %v", resp.StatusCode, m)
		}
		return m
	}
	tok := token(url.Values{"grant_type": {"authorization_code"}, "code": {authCode}, "code_verifier": {v},
		"client_id": {"app"}, "redirect_uri": {redirect}})
	for range 3 {
		tok = token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {"app"}})
	}
	if status := rawToolsList(t, mcpURL, tok["access_token"].(string)); status != http.StatusOK {
		t.Fatalf("a token from the surviving replicas at protect: %d", status)
	}
	front.mu.Lock()
	defer front.mu.Unlock()
	if len(front.fivexx) > 0 {
		t.Errorf("server errors: %v", front.fivexx)
	}
}
