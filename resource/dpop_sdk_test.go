package resource_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// dpopTransport sends a DPoP-bound token the way an MCP host does (RFC
// 9449 §7.1, §9): "Authorization: DPoP", a fresh proof per request made
// with dpop.Prover for the request's method and URL, the latest nonce the
// server gave, and one retry on use_dpop_nonce. With replay set, once a
// proof has been accepted it sends that proof again and again instead (an
// attacker's replay).
type dpopTransport struct {
	token   string
	prover  *dpop.Prover
	base    http.RoundTripper
	replay  bool
	retries atomic.Int64

	mu       sync.Mutex
	nonce    string
	accepted string
}

func (d *dpopTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.send(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !isNonceChallenge(resp) || r.GetBody == nil {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d.retries.Add(1)
	again := r.Clone(r.Context())
	if again.Body, err = r.GetBody(); err != nil {
		return nil, err
	}
	return d.send(again)
}

func (d *dpopTransport) send(r *http.Request) (*http.Response, error) {
	d.mu.Lock()
	nonce := d.nonce
	d.mu.Unlock()
	proof, err := d.prover.Proof(dpop.Request{Method: r.Method, URL: r.URL.String(), AccessToken: d.token, Nonce: nonce})
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.replay && d.accepted != "" {
		proof = d.accepted
	}
	d.mu.Unlock()
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "DPoP "+d.token)
	r.Header.Set("DPoP", proof)
	resp, err := d.base.RoundTrip(r)
	if err == nil {
		d.mu.Lock()
		if n := resp.Header.Get("DPoP-Nonce"); n != "" {
			d.nonce = n
		}
		if resp.StatusCode < 300 && d.accepted == "" {
			d.accepted = proof
		}
		d.mu.Unlock()
	}
	return resp, err
}

func isNonceChallenge(resp *http.Response) bool {
	chs, err := oauthmeta.ParseChallenges(resp.Header.Values("WWW-Authenticate")...)
	if err != nil {
		return false
	}
	c, ok := oauthmeta.FindChallenge(chs, "DPoP")
	return ok && c.Value(oauthmeta.ParamError) == string(oauthmeta.CodeUseDPoPNonce)
}

// connectWith connects a go-sdk client through rt.
func (s *sdkServer) connectWith(t *testing.T, rt http.RoundTripper) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             s.url,
		HTTPClient:           &http.Client{Transport: rt, Timeout: 10 * time.Second},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
}

// callTool connects through rt and calls name; any failure is returned.
func (s *sdkServer) callTool(t *testing.T, rt http.RoundTripper, name string) (string, error) {
	t.Helper()
	cs, err := s.connectWith(t, rt)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", errors.New("tool error")
	}
	return textOf(t, res), nil
}

// TestGoSDKDPoP is the end-to-end test of RFC 9449 on the resource side:
// a go-sdk client whose transport signs a proof per request with
// dpop.Prover talks to a go-sdk server behind the middleware in required
// mode with server nonces; a stolen token (another key), a replayed proof
// and the bound token sent as Bearer are refused.
func TestGoSDKDPoP(t *testing.T) {
	t.Parallel()
	s := newSDKServer(t, func(c *resource.Config) {
		c.DPoP = resource.DPoPConfig{Mode: resource.DPoPRequired, VerifierConfig: dpop.VerifierConfig{NonceKey: testNonceKey}}
	})
	prover, err := dpop.NewProver(dpop.ProverConfig{Now: s.f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	token := s.f.token(func(c *oauthtest.AccessToken) {
		c.Audience = []string{s.url}
		c.Extra = map[string]any{"cnf": map[string]any{"jkt": prover.JKT()}}
	})
	owner := &dpopTransport{token: token, prover: prover, base: http.DefaultTransport}
	got, err := s.callTool(t, owner, "binding")
	if err != nil {
		t.Fatalf("owner: %v", err)
	}
	if got != "DPoP "+prover.JKT() {
		t.Errorf("the tool saw %q", got)
	}
	if n := owner.retries.Load(); n != 1 {
		t.Errorf("RFC 9449 §9: %d nonce retries, want 1 (the first request only)", n)
	}
	if who, err := s.callTool(t, owner, "whoami"); err != nil || who != "user-1" {
		t.Errorf("whoami: %q %v", who, err)
	}

	thief, err := dpop.NewProver(dpop.ProverConfig{Now: s.f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	attacks := []struct {
		name    string
		rt      http.RoundTripper
		wantErr error
	}{
		{"RFC 9449 §6 stolen token with the thief's key", &dpopTransport{token: token, prover: thief, base: http.DefaultTransport}, resource.ErrDPoPKeyMismatch},
		{"RFC 9449 §11.1 replayed proof", &dpopTransport{token: token, prover: prover, base: http.DefaultTransport, replay: true}, resource.ErrDPoPReplayed},
		{"RS-18 bound token as Bearer", &bearerTransport{token: token, base: http.DefaultTransport}, resource.ErrDPoPRequired},
	}
	for _, a := range attacks {
		if _, err := s.callTool(t, a.rt, "whoami"); err == nil {
			t.Errorf("%s: served", a.name)
		}
		if !sawDenial(s.f.events.all(), a.wantErr) {
			t.Errorf("%s: no audit event with %v", a.name, a.wantErr)
		}
	}
}

func sawDenial(events []resource.Event, want error) bool {
	for _, e := range events {
		if e.Decision == resource.DecisionDeny && errors.Is(e.Err, want) {
			return true
		}
	}
	return false
}
