package resource_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

var testNonceKey = []byte("0123456789abcdef0123456789abcdef")

// TestDPoPNonce covers RFC 9449 §9: with server nonces, a proof without
// one, or with a stale or forged one, gets 401 DPoP error="use_dpop_nonce"
// and a fresh DPoP-Nonce, which the next proof can use; the nonce is also
// offered with the first 401 and exposed to browsers (§8).
func TestDPoPNonce(t *testing.T) {
	t.Parallel()
	const period = 5 * time.Minute
	tests := []struct {
		name    string
		nonce   func(f *dpopFixture, fresh string) string // the proof's nonce
		advance time.Duration                             // clock moved after getting the nonce
		status  int
		wantErr error
	}{
		{"nonce required", func(*dpopFixture, string) string { return "" }, 0, 401, resource.ErrDPoPNonceRequired},
		{"nonce valid", func(_ *dpopFixture, n string) string { return n }, 0, 200, nil},
		{"nonce valid in the next period", func(_ *dpopFixture, n string) string { return n }, period, 200, nil},
		{"nonce stale", func(_ *dpopFixture, n string) string { return n }, 2*period + time.Second, 401, resource.ErrDPoPNonceInvalid},
		{"nonce forged", func(_ *dpopFixture, n string) string { return n[:len(n)-2] + "AA" }, 0, 401, resource.ErrDPoPNonceInvalid},
		{"nonce of another resource", func(f *dpopFixture, _ string) string {
			other, err := dpop.NewHMACNonces(dpop.HMACNonceConfig{Key: testNonceKey, Now: f.clock.Now})
			if err != nil {
				f.t.Fatal(err)
			}
			n, _ := other.Nonce(context.Background())
			return n
		}, 0, 401, resource.ErrDPoPNonceInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newDPoPFixture(t, resource.DPoPAllowed, func(c *resource.Config) {
				c.DPoP.NonceKey, c.DPoP.NoncePeriod = testNonceKey, period
			})
			// The first 401 (no credentials) already carries a nonce.
			first, _ := f.serve(dpopPost("", ""))
			fresh := first.Header().Get("DPoP-Nonce")
			if first.Code != 401 || fresh == "" {
				t.Fatalf("no-credentials 401: status %d, DPoP-Nonce %q", first.Code, fresh)
			}
			if got := first.Header().Get("Access-Control-Expose-Headers"); !strings.Contains(got, "DPoP-Nonce") {
				t.Errorf("RFC 9449 §8: Access-Control-Expose-Headers = %q", got)
			}
			f.clock.Advance(tt.advance)
			p := mustProof(t, f.prover, dpop.Request{Method: "POST", URL: testResource, AccessToken: f.bound, Nonce: tt.nonce(f, fresh)})
			rec, _ := f.serve(dpopPost("DPoP", f.bound, p))
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d (%q)", rec.Code, tt.status, rec.Header().Values("WWW-Authenticate"))
			}
			ev := f.events.all()
			if e := ev[len(ev)-1]; !errors.Is(e.Err, tt.wantErr) || tt.wantErr == nil && e.Err != nil {
				t.Fatalf("audit Err = %v, want %v", e.Err, tt.wantErr)
			}
			if tt.status == 200 {
				return
			}
			checkDPoPChallenges(t, rec.Header(), resource.DPoPAllowed, "DPoP", "use_dpop_nonce")
			retry := rec.Header().Get("DPoP-Nonce")
			if retry == "" {
				t.Fatal("RFC 9449 §9: use_dpop_nonce without a DPoP-Nonce header")
			}
			// The client retries once with the nonce it was given.
			p = mustProof(t, f.prover, dpop.Request{Method: "POST", URL: testResource, AccessToken: f.bound, Nonce: retry})
			if rec, _ := f.serve(dpopPost("DPoP", f.bound, p)); rec.Code != 200 {
				t.Fatalf("retry with the fresh nonce: %d (%q)", rec.Code, rec.Header().Values("WWW-Authenticate"))
			}
		})
	}
}

// TestDPoPNonceOnlyFor401: Bearer requests and 403s carry no nonce;
// without nonces configured, no 401 does.
func TestDPoPNonceOnlyFor401(t *testing.T) {
	t.Parallel()
	withNonces := newDPoPFixture(t, resource.DPoPAllowed, func(c *resource.Config) {
		c.DPoP.NonceKey = testNonceKey
		c.Policy = &resource.Policy{Default: []string{"admin"}}
	})
	rec, _ := withNonces.serve(dpopPost("Bearer", withNonces.unbound))
	if rec.Code != 403 || rec.Header().Get("DPoP-Nonce") != "" {
		t.Errorf("403: status %d, DPoP-Nonce %q", rec.Code, rec.Header().Get("DPoP-Nonce"))
	}
	// A 403 names the scheme used, only.
	if chs := challengesOf(t, rec.Header()); len(chs) != 1 || chs[0].Scheme != "Bearer" || chs[0].Value(oauthmeta.ParamError) != "insufficient_scope" {
		t.Errorf("403 challenges %q", rec.Header().Values("WWW-Authenticate"))
	}
	without := newDPoPFixture(t, resource.DPoPAllowed, nil)
	rec, _ = without.serve(dpopPost("DPoP", without.bound))
	if rec.Code != 401 || rec.Header().Get("DPoP-Nonce") != "" {
		t.Errorf("no nonces: status %d, DPoP-Nonce %q", rec.Code, rec.Header().Get("DPoP-Nonce"))
	}
}

// TestDPoPStepUp: a valid DPoP request lacking a scope gets 403 with only
// the DPoP challenge, carrying insufficient_scope and the scopes (RS-12),
// and the audit records the proof as valid.
func TestDPoPStepUp(t *testing.T) {
	t.Parallel()
	f := newDPoPFixture(t, resource.DPoPAllowed, func(c *resource.Config) { c.Policy = testPolicy() })
	r := mcpPost("", toolCall("write_file"))
	r.Header.Set("Authorization", "DPoP "+f.bound)
	r.Header.Set("DPoP", f.proof(t, f.bound))
	rec, _ := f.serve(r)
	chs := challengesOf(t, rec.Header())
	if rec.Code != 403 || len(chs) != 1 || chs[0].Scheme != "DPoP" || chs[0].Value(oauthmeta.ParamError) != "insufficient_scope" ||
		chs[0].Value(oauthmeta.ParamScope) != "mcp:tools files:write" {
		t.Fatalf("403: %d %q", rec.Code, rec.Header().Values("WWW-Authenticate"))
	}
	ev := f.events.all()
	if e := ev[len(ev)-1]; e.Decision != resource.DecisionStepUp || e.DPoP != resource.DPoPValid || e.Scheme != "DPoP" {
		t.Errorf("audit %+v", e)
	}
}

// failingNonces is a nonce source that cannot mint nonces.
type failingNonces struct{}

func (failingNonces) Nonce(context.Context) (string, error)    { return "", errors.New("down") }
func (failingNonces) CheckNonce(context.Context, string) error { return errors.New("down") }

// TestDPoPNonceSourceDown: when a nonce is needed but the source fails,
// the answer is 503, not a challenge the client cannot meet.
func TestDPoPNonceSourceDown(t *testing.T) {
	t.Parallel()
	f := newDPoPFixture(t, resource.DPoPRequired, func(c *resource.Config) { c.DPoP.Nonces = failingNonces{} })
	rec, _ := f.serve(dpopPost("DPoP", f.bound, f.proof(t, f.bound)))
	if rec.Code != 503 || rec.Header().Get("WWW-Authenticate") != "" {
		t.Fatalf("status %d, challenge %q", rec.Code, rec.Header().Values("WWW-Authenticate"))
	}
	// A 401 for another reason still goes out, without a nonce.
	rec, _ = f.serve(dpopPost("", ""))
	if rec.Code != 401 || rec.Header().Get("DPoP-Nonce") != "" {
		t.Fatalf("no credentials: %d, nonce %q", rec.Code, rec.Header().Get("DPoP-Nonce"))
	}
}
