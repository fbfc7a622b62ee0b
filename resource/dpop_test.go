package resource_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// dpopFixture is a fixture with DPoP enabled, a client key (prover) and
// tokens bound to it or to nothing.
type dpopFixture struct {
	*fixture
	prover  *dpop.Prover
	bound   string // cnf.jkt = prover's key
	unbound string
}

func newDPoPFixture(t testing.TB, mode resource.DPoPMode, mutate func(*resource.Config)) *dpopFixture {
	t.Helper()
	f := &dpopFixture{}
	f.fixture = newFixture(t, func(c *resource.Config) {
		c.DPoP = resource.DPoPConfig{Mode: mode}
		if mutate != nil {
			mutate(c)
		}
	})
	f.prover = f.newProver(t)
	f.bound = f.boundTo(f.prover.JKT())
	f.unbound = f.token(nil)
	return f
}

func (f *dpopFixture) newProver(t testing.TB) *dpop.Prover {
	t.Helper()
	p, err := dpop.NewProver(dpop.ProverConfig{Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// boundTo mints a valid token bound to the key with thumbprint jkt.
func (f *dpopFixture) boundTo(jkt string) string {
	return f.token(func(c *oauthtest.AccessToken) { c.Extra = map[string]any{"cnf": map[string]any{"jkt": jkt}} })
}

// proof builds a proof for a POST to the resource with token.
func (f *dpopFixture) proof(t testing.TB, token string) string {
	return mustProof(t, f.prover, dpop.Request{Method: http.MethodPost, URL: testResource, AccessToken: token})
}

func mustProof(t testing.TB, p *dpop.Prover, req dpop.Request) string {
	t.Helper()
	s, err := p.Proof(req)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dpopPost is an MCP POST with "Authorization: <scheme> <token>" and the
// given DPoP headers.
func dpopPost(scheme, token string, proofs ...string) *http.Request {
	r := mcpPost("", "")
	if token != "" {
		r.Header.Set("Authorization", scheme+" "+token)
	}
	for _, p := range proofs {
		r.Header.Add("DPoP", p)
	}
	return r
}

// challengesOf parses every challenge of a response.
func challengesOf(t testing.TB, h http.Header) []oauthmeta.Challenge {
	t.Helper()
	chs, err := oauthmeta.ParseChallenges(h.Values("WWW-Authenticate")...)
	if err != nil {
		t.Fatalf("parse challenges %q: %v", h.Values("WWW-Authenticate"), err)
	}
	return chs
}

// checkDPoPChallenges checks the RFC 9449 §7.1/§7.2 shape of a refusal:
// the schemes offered for the mode, "algs" on the DPoP challenge,
// resource_metadata on each (RS-25), and the error only on the challenge
// of errOn ("both" for every challenge, "" for none).
func checkDPoPChallenges(t testing.TB, h http.Header, mode resource.DPoPMode, errOn, code string) {
	t.Helper()
	chs := challengesOf(t, h)
	want := map[resource.DPoPMode][]string{resource.DPoPDisabled: {"Bearer"}, resource.DPoPAllowed: {"Bearer", "DPoP"},
		resource.DPoPRequired: {"DPoP"}}[mode]
	if len(chs) != len(want) {
		t.Fatalf("challenges %q, want schemes %v", h.Values("WWW-Authenticate"), want)
	}
	for i, c := range chs {
		if !strings.EqualFold(c.Scheme, want[i]) {
			t.Fatalf("challenge %d scheme %q, want %q", i, c.Scheme, want[i])
		}
		if c.Value(oauthmeta.ParamResourceMetadata) != testPRM {
			t.Errorf("RS-25: %s challenge without resource_metadata", c.Scheme)
		}
		if strings.EqualFold(c.Scheme, "DPoP") && c.Value(oauthmeta.ParamAlgs) != strings.Join(dpop.DefaultAlgorithms(), " ") {
			t.Errorf("RFC 9449 §7.1: algs = %q", c.Value(oauthmeta.ParamAlgs))
		}
		wantErr := ""
		if errOn == "both" || strings.EqualFold(errOn, c.Scheme) {
			wantErr = code
		}
		if got := c.Value(oauthmeta.ParamError); got != wantErr {
			t.Errorf("RFC 9449 §7.2: %s challenge error = %q, want %q", c.Scheme, got, wantErr)
		}
	}
}

type dpopCase struct {
	name string
	mode resource.DPoPMode
	// reqs builds the requests; all but the last must be allowed.
	reqs    func(t *testing.T, f *dpopFixture) []*http.Request
	status  int
	errOn   string // the scheme whose challenge carries the error; "both"
	code    string
	wantErr error  // the audit event's Err (errors.Is)
	outcome string // the audit event's DPoP
}

func one(r *http.Request) []*http.Request { return []*http.Request{r} }

func dpopCases() []dpopCase {
	const allowed, required, disabled = resource.DPoPAllowed, resource.DPoPRequired, resource.DPoPDisabled
	return []dpopCase{
		{"RFC 9449 §7.1 valid DPoP request", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("DPoP", f.bound, f.proof(t, f.bound)))
		}, 200, "", "", nil, resource.DPoPValid},
		{"RFC 9449 §7.1 valid DPoP request in required mode", required, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("dpop", f.bound, f.proof(t, f.bound)))
		}, 200, "", "", nil, resource.DPoPValid},
		{"RFC 9449 §11.1 replayed proof", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			p := f.proof(t, f.bound)
			return []*http.Request{dpopPost("DPoP", f.bound, p), dpopPost("DPoP", f.bound, p)}
		}, 401, "DPoP", "invalid_dpop_proof", resource.ErrDPoPReplayed, "proof replayed"},
		{"RFC 9449 §4.3 proof for another URL", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			p := mustProof(t, f.prover, dpop.Request{Method: "POST", URL: "https://mcp.example.com/other", AccessToken: f.bound})
			return one(dpopPost("DPoP", f.bound, p))
		}, 401, "DPoP", "invalid_dpop_proof", dpop.ErrHTUMismatch, "htu does not match the request URI"},
		{"RFC 9449 §4.3 proof for another method", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			p := mustProof(t, f.prover, dpop.Request{Method: "GET", URL: testResource, AccessToken: f.bound})
			return one(dpopPost("DPoP", f.bound, p))
		}, 401, "DPoP", "invalid_dpop_proof", dpop.ErrHTMMismatch, "htm does not match the request method"},
		{"RFC 9449 §4.3 htu from the configured resource, not the Host header", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			spoofed := dpopPost("DPoP", f.bound, mustProof(t, f.prover, dpop.Request{Method: "POST", URL: "https://evil.example/mcp", AccessToken: f.bound}))
			spoofed.Host = "evil.example"
			good := dpopPost("DPoP", f.bound, f.proof(t, f.bound))
			good.Host = "internal-name:8080"
			return []*http.Request{good, spoofed}
		}, 401, "DPoP", "invalid_dpop_proof", dpop.ErrHTUMismatch, "htu does not match the request URI"},
		{"RFC 9449 §4.3 wrong ath", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("DPoP", f.bound, f.proof(t, f.unbound)))
		}, 401, "DPoP", "invalid_dpop_proof", resource.ErrDPoPTokenHash, "ath does not match the access token"},
		{"RFC 9449 §4.3 stale proof", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			p := f.proof(t, f.bound)
			f.clock.Advance(6 * time.Minute)
			return one(dpopPost("DPoP", f.bound, p))
		}, 401, "DPoP", "invalid_dpop_proof", dpop.ErrStaleProof, "proof too old"},
		{"RFC 9449 §4.3 tampered signature", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			p := f.proof(t, f.bound)
			i := strings.LastIndexByte(p, '.') + 2
			p = p[:i] + string("AB"[(strings.IndexByte("AB", p[i])+1)%2]) + p[i+1:]
			return one(dpopPost("DPoP", f.bound, p))
		}, 401, "DPoP", "invalid_dpop_proof", resource.ErrDPoPSignature, "invalid proof signature"},
		{"RFC 9449 §6 token bound to another key", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			other := f.boundTo(f.newProver(t).JKT())
			return one(dpopPost("DPoP", other, f.proof(t, other)))
		}, 401, "DPoP", "invalid_token", resource.ErrDPoPKeyMismatch, "access token bound to a different key"},
		{"RFC 9449 §7.1 missing proof for a bound token", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("DPoP", f.bound))
		}, 401, "DPoP", "invalid_dpop_proof", resource.ErrDPoPProofMissing, "missing DPoP proof"},
		{"RFC 9449 §4.3 two DPoP headers", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("DPoP", f.bound, f.proof(t, f.bound), f.proof(t, f.bound)))
		}, 401, "DPoP", "invalid_dpop_proof", resource.ErrDPoPMultipleProofs, "more than one DPoP proof"},
		{"RFC 9449 §4.3 two proofs in one DPoP header", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("DPoP", f.bound, f.proof(t, f.bound)+", "+f.proof(t, f.bound)))
		}, 401, "DPoP", "invalid_dpop_proof", resource.ErrDPoPMultipleProofs, "more than one DPoP proof"},
		{"RS-18 RFC 9449 §7.2 Bearer scheme with bound token", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("Bearer", f.bound, f.proof(t, f.bound)))
		}, 401, "Bearer", "invalid_token", resource.ErrBoundToken, "sender-constrained token presented as bearer"},
		{"RS-18 cached bound token presented as Bearer", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return []*http.Request{dpopPost("DPoP", f.bound, f.proof(t, f.bound)), dpopPost("Bearer", f.bound)}
		}, 401, "Bearer", "invalid_token", resource.ErrBoundToken, "sender-constrained token presented as bearer"},
		{"cached bound token still needs a proof", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return []*http.Request{dpopPost("DPoP", f.bound, f.proof(t, f.bound)), dpopPost("DPoP", f.bound)}
		}, 401, "DPoP", "invalid_dpop_proof", resource.ErrDPoPProofMissing, "missing DPoP proof"},
		{"cached bound token still needs its own key", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			thief := f.newProver(t)
			stolen := mustProof(t, thief, dpop.Request{Method: "POST", URL: testResource, AccessToken: f.bound})
			return []*http.Request{dpopPost("DPoP", f.bound, f.proof(t, f.bound)), dpopPost("DPoP", f.bound, stolen)}
		}, 401, "DPoP", "invalid_token", resource.ErrDPoPKeyMismatch, "access token bound to a different key"},
		{"RFC 9449 §7.1 DPoP scheme with unbound token in allowed mode", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("DPoP", f.unbound, f.proof(t, f.unbound)))
		}, 401, "DPoP", "invalid_token", resource.ErrDPoPUnboundToken, "token is not DPoP-bound"},
		{"Bearer scheme with unbound token in allowed mode ignores a DPoP header", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("Bearer", f.unbound, "garbage", "more garbage"))
		}, 200, "", "", nil, ""},
		{"RFC 9449 §7.2 no credentials in allowed mode", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("", ""))
		}, 401, "", "", resource.ErrNoToken, ""},
		{"RFC 9449 §7.2 ambiguous credentials in allowed mode", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			r := dpopPost("Bearer", f.unbound)
			r.Header.Add("Authorization", "DPoP "+f.bound)
			return one(r)
		}, 400, "both", "invalid_request", resource.ErrMultipleCredentials, ""},
		{"RFC 9449 §7.1 malformed DPoP credentials", allowed, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("DPoP", "a b", f.proof(t, f.bound)))
		}, 400, "DPoP", "invalid_request", resource.ErrMalformedCredentials, ""},
		{"proof without token binding in required mode", required, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("DPoP", f.unbound, f.proof(t, f.unbound)))
		}, 401, "DPoP", "invalid_token", resource.ErrDPoPUnboundToken, "token is not DPoP-bound"},
		{"Bearer scheme with unbound token in required mode", required, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("Bearer", f.unbound))
		}, 401, "DPoP", "invalid_token", resource.ErrDPoPRequired, "a DPoP-bound token and proof are required"},
		{"RS-18 Bearer scheme with bound token in required mode", required, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("Bearer", f.bound, f.proof(t, f.bound)))
		}, 401, "DPoP", "invalid_token", resource.ErrDPoPRequired, "a DPoP-bound token and proof are required"},
		{"no credentials in required mode", required, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("", ""))
		}, 401, "", "", resource.ErrNoToken, ""},
		{"RS-18 bound token refused in disabled mode", disabled, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("Bearer", f.bound, f.proof(t, f.bound)))
		}, 401, "Bearer", "invalid_token", resource.ErrBoundToken, "sender-constrained token presented as bearer"},
		{"DPoP scheme is no credentials in disabled mode", disabled, func(t *testing.T, f *dpopFixture) []*http.Request {
			return one(dpopPost("DPoP", f.bound, f.proof(t, f.bound)))
		}, 401, "", "", resource.ErrNoToken, ""},
	}
}

// TestDPoP covers the resource server side of RFC 9449 in the three modes:
// proof checks (§4.3), key binding (§6), the schemes and their challenges
// (§7.1, §7.2; RS-18, RS-25), and that the verified-token cache never
// stands in for a proof.
func TestDPoP(t *testing.T) {
	t.Parallel()
	for _, tt := range dpopCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newDPoPFixture(t, tt.mode, nil)
			reqs := tt.reqs(t, f)
			for i, req := range reqs {
				rec, s := f.serve(req)
				if i < len(reqs)-1 {
					if rec.Code != 200 {
						t.Fatalf("setup request %d: status %d (%q)", i, rec.Code, rec.Header().Values("WWW-Authenticate"))
					}
					continue
				}
				if rec.Code != tt.status {
					t.Fatalf("status = %d, want %d (%q)", rec.Code, tt.status, rec.Header().Values("WWW-Authenticate"))
				}
				if strings.Contains(rec.Body.String()+strings.Join(rec.Header().Values("WWW-Authenticate"), ""), f.bound) {
					t.Fatal("RS-24: response echoes the token")
				}
				if tt.status == 200 {
					checkAllowed(t, f, s, req, tt.outcome == resource.DPoPValid)
				} else {
					checkDPoPChallenges(t, rec.Header(), tt.mode, tt.errOn, tt.code)
					if s.count() != 0 {
						t.Fatal("handler called")
					}
				}
			}
			ev := f.events.all()
			e := ev[len(ev)-1]
			if tt.wantErr == nil && e.Err != nil || tt.wantErr != nil && !errors.Is(e.Err, tt.wantErr) {
				t.Errorf("audit Err = %v, want %v", e.Err, tt.wantErr)
			}
			if e.DPoP != tt.outcome {
				t.Errorf("audit DPoP = %q, want %q", e.DPoP, tt.outcome)
			}
		})
	}
}

// checkAllowed checks what the handler of an allowed request saw.
func checkAllowed(t *testing.T, f *dpopFixture, s *seen, req *http.Request, viaDPoP bool) {
	t.Helper()
	if len(s.authorization) != 0 || len(s.dpop) != 0 {
		t.Error("RS-19: Authorization or DPoP header reached the handler")
	}
	if req.Header.Get("Authorization") == "" || (viaDPoP && req.Header.Get("DPoP") == "") {
		t.Error("the middleware removed a header from the request it was given")
	}
	wantScheme, wantJKT := "Bearer", ""
	if viaDPoP {
		wantScheme, wantJKT = "DPoP", f.prover.JKT()
	}
	if s.info == nil || s.info.Scheme != wantScheme || s.info.JKT != wantJKT {
		t.Errorf("TokenInfo = %+v, want scheme %s, jkt %q", s.info, wantScheme, wantJKT)
	}
	ev := f.events.all()
	if e := ev[len(ev)-1]; e.Decision != resource.DecisionAllow || e.JKT != wantJKT || e.Scheme != wantScheme {
		t.Errorf("audit event %+v", e)
	}
}

// TestDPoPHandlerHeaders: the handler of a DPoP request sees neither the
// token nor the proof (RS-19), and the context has the binding.
func TestDPoPHandlerHeaders(t *testing.T) {
	t.Parallel()
	f := newDPoPFixture(t, resource.DPoPRequired, nil)
	var auth, proof []string
	var info *resource.TokenInfo
	h := f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, proof, info = r.Header.Values("Authorization"), r.Header.Values("DPoP"), resource.TokenInfoFromContext(r.Context())
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, dpopPost("DPoP", f.bound, f.proof(t, f.bound)))
	if rec.Code != 200 || auth != nil || proof != nil {
		t.Fatalf("status %d, handler saw Authorization %q, DPoP %q", rec.Code, auth, proof)
	}
	if info.Scheme != "DPoP" || info.JKT != f.prover.JKT() || info.Subject != "user-1" {
		t.Errorf("TokenInfo = %+v", info)
	}
}

// TestDPoPVerifyRefusesBoundTokens: Verify has no request to check a proof
// against, so a bound token is refused there in every mode (RS-18).
func TestDPoPVerifyRefusesBoundTokens(t *testing.T) {
	t.Parallel()
	for _, mode := range []resource.DPoPMode{resource.DPoPDisabled, resource.DPoPAllowed, resource.DPoPRequired} {
		f := newDPoPFixture(t, mode, nil)
		if _, err := f.v.Verify(t.Context(), f.bound); !errors.Is(err, resource.ErrBoundToken) {
			t.Errorf("%v: Verify(bound) = %v", mode, err)
		}
		// Once verified with a proof and cached, it is still refused.
		if rec, _ := f.serve(dpopPost("DPoP", f.bound, f.proof(t, f.bound))); mode != resource.DPoPDisabled && rec.Code != 200 {
			t.Fatalf("%v: DPoP request %d", mode, rec.Code)
		}
		if _, err := f.v.Verify(t.Context(), f.bound); !errors.Is(err, resource.ErrBoundToken) {
			t.Errorf("%v: Verify(cached bound) = %v", mode, err)
		}
	}
}

// TestDPoPStolenTokenFloodKeepsOwnerServed: someone holding a stolen token
// (RS-18, RFC 9449 §7.1, §11.1) signs any number of valid proofs with their
// own key. Each is refused with invalid_token before the replay store is
// written, so a tiny store never fills and the token's owner is still
// served (no 503 for everyone).
func TestDPoPStolenTokenFloodKeepsOwnerServed(t *testing.T) {
	t.Parallel()
	const entries = 3
	tests := []struct {
		name    string
		stolen  func(f *dpopFixture) string
		wantErr error
	}{
		{"stolen DPoP-bound token", func(f *dpopFixture) string { return f.bound }, resource.ErrDPoPKeyMismatch},
		{"stolen unbound token presented as DPoP", func(f *dpopFixture) string { return f.unbound }, resource.ErrDPoPUnboundToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newDPoPFixture(t, resource.DPoPAllowed, func(c *resource.Config) { c.DPoP.MaxReplayEntries = entries })
			thief := f.newProver(t)
			token := tt.stolen(f)
			for i := range 5 * entries {
				proof := mustProof(t, thief, dpop.Request{Method: http.MethodPost, URL: testResource, AccessToken: token})
				rec, s := f.serve(dpopPost("DPoP", token, proof))
				if rec.Code != http.StatusUnauthorized || s.count() != 0 {
					t.Fatalf("thief request %d: status %d, handler calls %d", i, rec.Code, s.count())
				}
				checkDPoPChallenges(t, rec.Header(), resource.DPoPAllowed, "DPoP", "invalid_token")
				ev := f.events.all()
				if e := ev[len(ev)-1]; !errors.Is(e.Err, tt.wantErr) {
					t.Fatalf("thief request %d: audit Err = %v, want %v", i, e.Err, tt.wantErr)
				}
			}
			for i := range entries {
				rec, _ := f.serve(dpopPost("DPoP", f.bound, f.proof(t, f.bound)))
				if rec.Code != http.StatusOK {
					t.Fatalf("owner request %d after the flood: status %d (%q)", i, rec.Code, rec.Header().Values("WWW-Authenticate"))
				}
			}
		})
	}
}
