package resource_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// TestDPoPConfigRefusals: DPoP settings fail closed.
func TestDPoPConfigRefusals(t *testing.T) {
	t.Parallel()
	keys := keyset.Static{{ID: "k", Public: oauthtest.NewKey(t, oauthtest.ES256, "k").Public()}}
	tests := []struct {
		name string
		dpop resource.DPoPConfig
	}{
		{"unknown mode", resource.DPoPConfig{Mode: 7}},
		{"settings while disabled", resource.DPoPConfig{VerifierConfig: dpop.VerifierConfig{NonceKey: testNonceKey}}},
		{"algorithms while disabled", resource.DPoPConfig{VerifierConfig: dpop.VerifierConfig{Algorithms: []string{"ES256"}}}},
		{"alg none", resource.DPoPConfig{Mode: resource.DPoPAllowed, VerifierConfig: dpop.VerifierConfig{Algorithms: []string{"none"}}}},
		{"HS256", resource.DPoPConfig{Mode: resource.DPoPRequired, VerifierConfig: dpop.VerifierConfig{Algorithms: []string{"HS256"}}}},
		{"short nonce key", resource.DPoPConfig{Mode: resource.DPoPRequired, VerifierConfig: dpop.VerifierConfig{NonceKey: []byte("short")}}},
		{"nonce key and source", resource.DPoPConfig{Mode: resource.DPoPRequired, VerifierConfig: dpop.VerifierConfig{NonceKey: testNonceKey, Nonces: failingNonces{}}}},
		{"nonce period without key", resource.DPoPConfig{Mode: resource.DPoPRequired, VerifierConfig: dpop.VerifierConfig{NoncePeriod: time.Minute}}},
		{"negative window", resource.DPoPConfig{Mode: resource.DPoPAllowed, VerifierConfig: dpop.VerifierConfig{IATWindow: -time.Second}}},
		{"negative proof size", resource.DPoPConfig{Mode: resource.DPoPAllowed, VerifierConfig: dpop.VerifierConfig{MaxProofSize: -1}}},
		{"a clock of its own", resource.DPoPConfig{Mode: resource.DPoPAllowed, VerifierConfig: dpop.VerifierConfig{Now: time.Now}}},
		{"clock while disabled", resource.DPoPConfig{VerifierConfig: dpop.VerifierConfig{Now: time.Now}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := resource.New(resource.Config{Resource: testResource, DPoP: tt.dpop,
				Issuers: []resource.Issuer{{Issuer: testIssuer, Keys: keys}}})
			if !errors.Is(err, resource.ErrInvalidConfig) {
				t.Fatalf("New = %v, want ErrInvalidConfig", err)
			}
		})
	}
	if s := resource.DPoPRequired.String(); s != "required" {
		t.Errorf("String() = %q", s)
	}
}

// TestDPoPMetadata covers RFC 9728 §2 with RFC 9449: the metadata lists
// the proof algorithms when DPoP is enabled and says
// dpop_bound_access_tokens_required in required mode only (RS-01).
func TestDPoPMetadata(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		mode     resource.DPoPMode
		algs     []string
		required bool
		golden   string
	}{
		{resource.DPoPDisabled, nil, false, ""},
		{resource.DPoPAllowed, dpop.DefaultAlgorithms(), false, ""},
		{resource.DPoPRequired, dpop.DefaultAlgorithms(), true, "protected_resource_metadata_dpop_required.json"},
	} {
		f := newDPoPFixture(t, tt.mode, func(c *resource.Config) { c.ScopesSupported = []string{"mcp:tools"} })
		_, local := mounted(t, f.fixture)
		resp, body := get(t, local(testPRM))
		m, err := oauthmeta.ParseProtectedResourceMetadata(body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v: %d %v", tt.mode, resp.StatusCode, err)
		}
		if err := m.Validate(testResource, oauthmeta.URLPolicy{}); err != nil {
			t.Errorf("%v: %v", tt.mode, err)
		}
		if !equalStrings(m.DPoPSigningAlgValuesSupported, tt.algs) || m.DPoPBoundAccessTokensRequired != tt.required {
			t.Errorf("%v: dpop_signing_alg_values_supported %v, dpop_bound_access_tokens_required %v",
				tt.mode, m.DPoPSigningAlgValuesSupported, m.DPoPBoundAccessTokensRequired)
		}
		if tt.golden != "" {
			golden.JSON(t, tt.golden, jsonValue(t, body))
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDPoPChallengeGolden pins the RFC 9449 §7.2 challenge headers of the
// allowed mode: no credentials, a bad Bearer token, a bad proof.
func TestDPoPChallengeGolden(t *testing.T) {
	t.Parallel()
	f := newDPoPFixture(t, resource.DPoPAllowed, func(c *resource.Config) { c.Policy = testPolicy() })
	for _, tt := range []struct {
		file string
		req  *http.Request
	}{
		{"challenge_401_dpop_allowed.txt", dpopPost("", "")},
		{"challenge_401_dpop_bearer_bound.txt", dpopPost("Bearer", f.bound)},
		{"challenge_401_dpop_replayed.txt", func() *http.Request {
			p := f.proof(t, f.bound)
			f.serve(dpopPost("DPoP", f.bound, p))
			return dpopPost("DPoP", f.bound, p)
		}()},
	} {
		rec, _ := f.serve(tt.req)
		var text string
		for _, h := range rec.Header().Values("WWW-Authenticate") {
			text += h + "\n"
		}
		golden.Text(t, tt.file, text)
	}
}

// TestDPoPIntrospection covers RFC 9449 §6.2: an introspected token with
// token_type DPoP and cnf.jkt is handled like a bound JWT, a thief's Bearer
// attempt does not poison the cache for its owner, and a DPoP token_type
// without a binding is refused.
func TestDPoPIntrospection(t *testing.T) {
	t.Parallel()
	as := introspectionAS(t)
	f := newDPoPFixture(t, resource.DPoPAllowed, func(c *resource.Config) {
		c.Introspection = &resource.IntrospectionConfig{Endpoint: as.URL + "/introspect", ClientID: "rs-client",
			ClientSecret: "s3cret", HTTPClient: as.Client()}
	})
	exp := f.clock.Now().Add(time.Hour).Unix()
	answer := func(tokenType string, cnf any) map[string]any {
		m := map[string]any{"active": true, "iss": testIssuer, "aud": testResource, "exp": exp, "sub": "user-9", "token_type": tokenType}
		if cnf != nil {
			m["cnf"] = cnf
		}
		return m
	}
	as.SetIntrospection("opaque-bound", answer("DPoP", map[string]any{"jkt": f.prover.JKT()}))
	as.SetIntrospection("opaque-no-jkt", answer("DPoP", nil))
	as.SetIntrospection("opaque-other-key", answer("Bearer", map[string]any{"jkt": f.newProver(t).JKT()}))
	steps := []struct {
		name    string
		req     *http.Request
		status  int
		wantErr error
	}{
		{"RS-18 thief sends the bound token as Bearer", dpopPost("Bearer", "opaque-bound"), 401, resource.ErrBoundToken},
		{"owner with a proof", dpopPost("DPoP", "opaque-bound", f.proof(t, "opaque-bound")), 200, nil},
		{"Bearer again, from the cache", dpopPost("Bearer", "opaque-bound"), 401, resource.ErrBoundToken},
		{"owner again, from the cache", dpopPost("DPoP", "opaque-bound", f.proof(t, "opaque-bound")), 200, nil},
		{"cached token, replayed proof", func() *http.Request {
			p := f.proof(t, "opaque-bound")
			f.serve(dpopPost("DPoP", "opaque-bound", p))
			return dpopPost("DPoP", "opaque-bound", p)
		}(), 401, resource.ErrDPoPReplayed},
		{"token_type DPoP without cnf.jkt", dpopPost("DPoP", "opaque-no-jkt", f.proof(t, "opaque-no-jkt")), 401, resource.ErrTokenType},
		{"cnf.jkt of another key", dpopPost("DPoP", "opaque-other-key", f.proof(t, "opaque-other-key")), 401, resource.ErrDPoPKeyMismatch},
	}
	for _, st := range steps { // in order: the cache carries state
		rec, s := f.serve(st.req)
		ev := f.events.all()
		e := ev[len(ev)-1]
		if rec.Code != st.status || !errors.Is(e.Err, st.wantErr) || st.wantErr == nil && e.Err != nil {
			t.Fatalf("%s: status %d, audit %v; want %d, %v", st.name, rec.Code, e.Err, st.status, st.wantErr)
		}
		if rec.Code == 200 && (s.info.JKT != f.prover.JKT() || s.info.Scheme != "DPoP") {
			t.Errorf("%s: TokenInfo %+v", st.name, s.info)
		}
	}
	if n := as.Hits("/introspect"); n != 3 {
		t.Errorf("introspection calls = %d, want 3 (one per token: the thief's Bearer attempt cached the answer too)", n)
	}
}
