package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/testdb"
)

// TestProtectReplicasShareDPoPReplay: two `mcpauth protect` replicas of
// one resource on one Redis. A DPoP proof accepted at one is refused at
// the other; a fresh proof is accepted there; with Redis stopped proofs
// are refused (fail closed) with no detail, and accepted again once it is
// back.
func TestProtectReplicasShareDPoPReplay(t *testing.T) {
	rd := testdb.StartRedis(t)
	t.Setenv("MCPAUTH_TEST_REDIS", rd.URL())
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer upstream.Close()
	as := startAuthserver(t, "--insecure-http", "--client", "id=svc,secret=svc-secret-0123456789,grant=client_credentials")
	const resource = "http://127.0.0.1:9/mcp"
	var replicas []string
	for range 2 {
		replicas = append(replicas, startSubcommand(t, "protect", "--addr", "127.0.0.1:0", "--insecure-http",
			"--upstream", upstream.URL+"/mcp", "--issuer", as, "--resource", resource,
			"--dpop", "required", "--redis-url", "env:MCPAUTH_TEST_REDIS"))
	}

	prover, err := dpop.NewProver(dpop.ProverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tokenProof, err := prover.Proof(dpop.Request{Method: http.MethodPost, URL: as + "/token"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, as+"/token", strings.NewReader(url.Values{
		"grant_type": {"client_credentials"}, "resource": {resource}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(dpop.HeaderName, tokenProof)
	req.SetBasicAuth("svc", "svc-secret-0123456789")
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || tok.TokenType != "DPoP" {
		t.Fatalf("token: %d %+v", resp.StatusCode, tok)
	}

	proof := func() string {
		p, err := prover.Proof(dpop.Request{Method: http.MethodPost, URL: resource, AccessToken: tok.AccessToken})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	call := func(replica, proof string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, replica+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "DPoP "+tok.AccessToken)
		req.Header.Set(dpop.HeaderName, proof)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate") + " " + string(body)
	}

	p1 := proof()
	if code, body := call(replicas[0], p1); code != http.StatusOK {
		t.Fatalf("fresh proof at replica A: %d %s", code, body)
	}
	if code, body := call(replicas[1], p1); code != http.StatusUnauthorized {
		t.Fatalf("the same proof at replica B: %d %s; want 401", code, body)
	}
	if code, body := call(replicas[1], proof()); code != http.StatusOK {
		t.Fatalf("fresh proof at replica B: %d %s", code, body)
	}

	rd.Stop()
	for i, r := range replicas {
		code, body := call(r, proof())
		if code != http.StatusUnauthorized && code != http.StatusServiceUnavailable {
			t.Fatalf("replica %d with Redis stopped: %d %s; want 401 or 503", i, code, body)
		}
		if strings.Contains(strings.ToLower(body), "redis") || strings.Contains(body, "connect") {
			t.Errorf("replica %d tells the client why: %s", i, body)
		}
	}
	rd.Restart()
	if code, body := call(replicas[0], proof()); code != http.StatusOK {
		t.Fatalf("after Redis is back: %d %s", code, body)
	}
}

// TestAuthserverReplicasShareReplay: two `mcpauth authserver` replicas of
// one issuer on one Redis. A DPoP proof for the token endpoint accepted at
// one is refused at the other; with Redis stopped the token endpoint
// answers 503 temporarily_unavailable to a request with a proof.
func TestAuthserverReplicasShareReplay(t *testing.T) {
	rd := testdb.StartRedis(t)
	t.Setenv("MCPAUTH_TEST_REDIS", rd.URL())
	const issuer = "http://127.0.0.1:9"
	var replicas []string
	for range 2 {
		replicas = append(replicas, startAuthserver(t, "--insecure-http", "--issuer", issuer, "--redis-url", "env:MCPAUTH_TEST_REDIS",
			"--client", "id=svc,secret=svc-secret-0123456789,grant=client_credentials"))
	}
	prover, err := dpop.NewProver(dpop.ProverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	token := func(replica, proof string) (int, string) {
		code, _, body := svcTokenWithProof(t, replica, proof)
		return code, body
	}
	proof := func() string {
		p, err := prover.Proof(dpop.Request{Method: http.MethodPost, URL: issuer + "/token"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p1 := proof()
	if code, body := token(replicas[0], p1); code != http.StatusOK {
		t.Fatalf("fresh proof at replica A: %d %s", code, body)
	}
	if code, body := token(replicas[1], p1); code != http.StatusBadRequest || !strings.Contains(body, "invalid_dpop_proof") {
		t.Fatalf("the same proof at replica B: %d %s; want 400 invalid_dpop_proof", code, body)
	}
	rd.Stop()
	if code, body := token(replicas[1], proof()); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, "temporarily_unavailable") || strings.Contains(strings.ToLower(body), "redis") {
		t.Fatalf("with Redis stopped: %d %s; want 503 temporarily_unavailable without detail", code, body)
	}
}

// TestAuthserverReplicasShareDPoPNonce: with one --dpop-nonce-key, a
// nonce one replica issued is accepted at another.
func TestAuthserverReplicasShareDPoPNonce(t *testing.T) {
	t.Setenv("MCPAUTH_TEST_NONCE_KEY", testKEKFlag)
	const issuer = "http://127.0.0.1:9"
	var replicas []string
	for range 2 {
		replicas = append(replicas, startAuthserver(t, "--insecure-http", "--issuer", issuer,
			"--dpop-nonce", "--dpop-nonce-key", "env:MCPAUTH_TEST_NONCE_KEY",
			"--client", "id=svc,secret=svc-secret-0123456789,grant=client_credentials"))
	}
	prover, err := dpop.NewProver(dpop.ProverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	token := func(replica, nonce string) (int, string, string) {
		proof, err := prover.Proof(dpop.Request{Method: http.MethodPost, URL: issuer + "/token", Nonce: nonce})
		if err != nil {
			t.Fatal(err)
		}
		return svcTokenWithProof(t, replica, proof)
	}
	code, nonce, body := token(replicas[0], "")
	if code != http.StatusBadRequest || nonce == "" || !strings.Contains(body, "use_dpop_nonce") {
		t.Fatalf("without a nonce: %d %q %s", code, nonce, body)
	}
	if code, _, body := token(replicas[1], nonce); code != http.StatusOK {
		t.Fatalf("replica B refused replica A's nonce: %d %s", code, body)
	}
}

// svcTokenWithProof asks replica for a client_credentials token for the
// "svc" client with the DPoP proof, and returns the status, the DPoP-Nonce
// header and the body.
func svcTokenWithProof(t *testing.T, replica, proof string) (code int, nonce, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, replica+"/token", strings.NewReader("grant_type=client_credentials"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(dpop.HeaderName, proof)
	req.SetBasicAuth("svc", "svc-secret-0123456789")
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header.Get("DPoP-Nonce"), string(b)
}
