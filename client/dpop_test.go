package client

import (
	"errors"
	"testing"
)

// TestRFC9449TokenTypeNeedsProof: token_type DPoP is accepted only from a
// token request that carried a proof (RFC 9449 §5); Bearer unless the
// resource accepts only DPoP-bound tokens.
func TestRFC9449TokenTypeNeedsProof(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tokenType string
		proofSent bool
		required  bool // the resource accepts only DPoP-bound tokens
		wantErr   error
	}{
		{"Bearer without proof", "Bearer", false, false, nil},
		{"Bearer after a proof (server without DPoP)", "bearer", true, false, nil},
		{"DPoP after a proof", "DPoP", true, false, nil},
		{"DPoP without proof", "DPoP", false, false, errTokenType},
		{"unknown type", "MAC", true, false, errTokenType},
		{"Bearer after a proof when the resource requires DPoP (no downgrade)", "Bearer", true, true, errDPoPUnsupported},
	}
	e := newRawTokenEndpoint(t)
	c, err := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true, DPoP: &DPoPConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(`{"access_token":"a","token_type":"` + tt.tokenType + `"}`)
			e.required = tt.required
			_, err := e.answer(c, tt.proofSent, 200, "application/json", body)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
