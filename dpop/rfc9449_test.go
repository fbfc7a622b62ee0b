package dpop_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
)

// rfcProof is the DPoP proof of RFC 9449 §4.1, Figure 3 (a token request).
const rfcProof = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19.eyJqdGkiOiItQndDM0VTYzZhY2MybFRjIiwiaHRtIjoiUE9TVCIsImh0dSI6Imh0dHBzOi8vc2VydmVyLmV4YW1wbGUuY29tL3Rva2VuIiwiaWF0IjoxNTYyMjYyNjE2fQ.2-GxA6T8lP4vfrg8v-FdWP0A0zdrj8igiMLvqRMUvwnQg4PtFLbdLXiOSsX0x7NVY-FNyJK70nfbV37xRZT3Lg"

func TestRFC9449ExampleProof(t *testing.T) {
	t.Parallel()
	v, err := dpop.NewVerifier(dpop.VerifierConfig{Now: func() time.Time { return time.Unix(1562262616, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	req := dpop.Request{Method: "POST", URL: "https://server.example.com/token"}
	p, err := v.Verify(context.Background(), rfcProof, req)
	if err != nil {
		t.Fatalf("RFC example proof: %v", err)
	}
	// §6.1 binds the example token to this thumbprint.
	if err := p.CheckBinding("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"); err != nil {
		t.Fatal(err)
	}
	if p.JTI != "-BwC3ESc6acc2lTc" || !p.IssuedAt.Equal(time.Unix(1562262616, 0)) {
		t.Fatalf("claims = %+v", p)
	}
	if _, err := v.Verify(context.Background(), rfcProof, req); !errors.Is(err, dpop.ErrReplayedProof) {
		t.Fatalf("second presentation: %v, want ErrReplayedProof", err)
	}
}
