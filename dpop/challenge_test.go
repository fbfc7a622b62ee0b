package dpop_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

func TestChallenge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, replayErr := e.v.Verify(context.Background(), "x.y.z", resourceReq())
	tests := []struct {
		name      string
		err       error
		extra     []oauthmeta.Param
		wantError string
		wantDesc  bool
	}{
		{name: "no credentials: no error parameter (RFC 6750 §3.1)"},
		{name: "invalid proof", err: replayErr, wantError: "invalid_dpop_proof", wantDesc: true},
		{name: "nonce required", err: errNonce(t), wantError: "use_dpop_nonce", wantDesc: true},
		{name: "key mismatch", err: errKeyMismatch(t, e), wantError: "invalid_token", wantDesc: true},
		{name: "foreign error", err: errors.New("boom"), wantError: "invalid_dpop_proof"},
		{name: "with resource_metadata", err: replayErr, wantError: "invalid_dpop_proof", wantDesc: true,
			extra: []oauthmeta.Param{{Name: oauthmeta.ParamResourceMetadata, Value: "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			header := dpop.Challenge([]string{"ES256", "PS256"}, tt.err, tt.extra...).String()
			cs, err := oauthmeta.ParseChallenges(header)
			if err != nil {
				t.Fatalf("ParseChallenges(%q): %v", header, err)
			}
			c, ok := oauthmeta.FindChallenge(cs, "DPoP")
			if !ok {
				t.Fatalf("no DPoP challenge in %q", header)
			}
			if got := c.Value(oauthmeta.ParamAlgs); got != "ES256 PS256" {
				t.Fatalf("algs = %q", got)
			}
			got, has := c.Get(oauthmeta.ParamError)
			if has != (tt.wantError != "") || got != tt.wantError {
				t.Fatalf("error = %q (present %v), want %q", got, has, tt.wantError)
			}
			if _, has := c.Get(oauthmeta.ParamErrorDescription); has != tt.wantDesc {
				t.Fatalf("error_description present = %v, want %v", has, tt.wantDesc)
			}
			for _, p := range tt.extra {
				if c.Value(p.Name) != p.Value {
					t.Fatalf("%s = %q, want %q", p.Name, c.Value(p.Name), p.Value)
				}
			}
		})
	}
}

func errNonce(t *testing.T) error {
	e := newEnv(t, withNonces)
	_, err := e.v.Verify(context.Background(), e.proof(nil, nil), resourceReq())
	if !dpop.IsNonceError(err) {
		t.Fatalf("want a nonce error, got %v", err)
	}
	return err
}

func errKeyMismatch(t *testing.T, e *env) error {
	p, err := e.v.Verify(context.Background(), e.proof(nil, map[string]any{"jti": "mismatch"}), resourceReq())
	if err != nil {
		t.Fatal(err)
	}
	return p.CheckBinding("another-thumbprint")
}

func TestChallengeWithoutAlgs(t *testing.T) {
	t.Parallel()
	if got := dpop.Challenge(nil, nil).String(); got != "DPoP" {
		t.Fatalf("Challenge(nil, nil) = %q, want %q", got, "DPoP")
	}
}

func TestProofFromHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		values  []string
		want    string
		wantErr error
	}{
		{name: "one proof", values: []string{"a.b.c"}, want: "a.b.c"},
		{name: "surrounding space", values: []string{" a.b.c "}, want: "a.b.c"},
		{name: "absent", wantErr: dpop.ErrMissingProof},
		{name: "empty", values: []string{""}, wantErr: dpop.ErrMissingProof},
		{name: "two header fields (§4.3 check 1)", values: []string{"a.b.c", "d.e.f"}, wantErr: dpop.ErrMultipleProofs},
		{name: "comma-joined list", values: []string{"a.b.c, d.e.f"}, wantErr: dpop.ErrMultipleProofs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for _, v := range tt.values {
				h.Add("DPoP", v)
			}
			got, err := dpop.ProofFromHeader(h)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) || got != tt.want {
				t.Fatalf("ProofFromHeader = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			if err != nil && !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidDPoPProof}) {
				t.Fatalf("error %v lacks invalid_dpop_proof", err)
			}
		})
	}
}

func TestOAuthError(t *testing.T) {
	t.Parallel()
	if dpop.OAuthError(nil) != nil {
		t.Fatal("OAuthError(nil) != nil")
	}
	if got := dpop.OAuthError(errors.New("x")); got.Code != oauthmeta.CodeInvalidDPoPProof || got.Description != "" {
		t.Fatalf("OAuthError(foreign) = %+v", got)
	}
}

// TestProofFromHeaderDoesNotAllocate: the proof is read from the canonical
// key directly, so a request with one proof costs no allocation.
// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
func TestProofFromHeaderDoesNotAllocate(t *testing.T) {
	h := http.Header{}
	h.Set(dpop.HeaderName, "a.b.c")
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := dpop.ProofFromHeader(h); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ProofFromHeader allocates %v times per call, want 0", allocs)
	}
}
