package attack

import (
	"crypto/ecdsa"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/loadgen"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// dpopTarget is a resource server that requires DPoP-bound tokens (RFC
// 9449), as the DPoP attacks see it: where to send requests, how to get a
// valid token for it, and how many requests reached the MCP server behind
// it.
type dpopTarget struct {
	name string
	// resource is the resource identifier: the URL requests go to and the
	// proofs' htu.
	resource string
	client   *http.Client
	// now is the target's clock, for the proofs' iat.
	now func() time.Time
	// token returns a valid token for resource, bound to the key with
	// thumbprint jkt ("" for an unbound token).
	token func(jkt string) string
	// served counts requests that reached the MCP server.
	served func() int64
	// nonces: the target requires server-provided nonces (RFC 9449 §9).
	nonces bool
	sec    *secrets
}

// dpopAttacker is the state one attack starts from: an honest client's
// key, a token bound to it and an unbound token, and (for a target with
// nonces) the current nonce, fetched as an honest client does.
type dpopAttacker struct {
	t       *testing.T
	tg      *dpopTarget
	honest  *dpop.Prover
	bound   string
	unbound string
	nonce   string
}

func newDPoPAttacker(t *testing.T, tg *dpopTarget) *dpopAttacker {
	t.Helper()
	a := &dpopAttacker{t: t, tg: tg, honest: newProverAt(t, tg.now)}
	a.bound, a.unbound = tg.token(a.honest.JKT()), tg.token("")
	tg.sec.Add(a.bound, a.unbound)
	if tg.nonces {
		res := a.send(a.post("", ""))
		if a.nonce = res.header.Get(dpop.NonceHeader); a.nonce == "" {
			t.Fatalf("%s: no DPoP-Nonce with the first challenge", tg.name)
		}
	}
	return a
}

// newProverAt is a prover with a fresh ES256 key whose proofs say they
// were made at now().
func newProverAt(t *testing.T, now func() time.Time) *dpop.Prover {
	t.Helper()
	p, err := dpop.NewProver(dpop.ProverConfig{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// proofBy is p's proof for method and url with token (and the current
// nonce, if the target has nonces).
func (a *dpopAttacker) proofBy(p *dpop.Prover, method, url, token string) string {
	a.t.Helper()
	s, err := p.Proof(dpop.Request{Method: method, URL: url, AccessToken: token, Nonce: a.nonce})
	if err != nil {
		a.t.Fatal(err)
	}
	a.tg.sec.Add(s)
	return s
}

// proof is the honest client's proof for a POST to the resource with token.
func (a *dpopAttacker) proof(token string) string {
	return a.proofBy(a.honest, http.MethodPost, a.tg.resource, token)
}

// claims are the claims of an honest proof for a POST with token, at the
// target's clock, for hand-built proofs.
func (a *dpopAttacker) claims(token string) map[string]any {
	_, claims := oauthtest.DecodeJWS(a.t, a.proof(token))
	return claims
}

// post is an MCP tools/call POST to the resource with
// "Authorization: <scheme> <token>" (none when token is "") and the DPoP
// headers given.
func (a *dpopAttacker) post(scheme, token string, proofs ...string) *http.Request {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, a.tg.resource, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "whoami")
	if token != "" {
		req.Header.Set("Authorization", scheme+" "+token)
	}
	for _, p := range proofs {
		req.Header.Add(dpop.HeaderName, p)
	}
	return req
}

// send sends req and records what came back as text that must hold no
// credential.
func (a *dpopAttacker) send(req *http.Request) result {
	a.t.Helper()
	resp, err := a.tg.client.Do(req)
	if err != nil {
		a.t.Fatalf("request: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	res := result{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if chs, err := oauthmeta.ParseChallenges(resp.Header.Values("WWW-Authenticate")...); err == nil {
		if ch, ok := oauthmeta.FindChallenge(chs, dpop.Scheme); ok {
			res.challenge = &ch
		}
	}
	a.tg.sec.Seen(res.body)
	for _, vs := range resp.Header {
		a.tg.sec.Seen(vs...)
	}
	return res
}

// dpopAttack is one attack: build returns the requests to send, of which
// all but the last are honest ones that must be allowed; the last must get
// status, with code as the error of the DPoP challenge ("" for none).
type dpopAttack struct {
	name      string
	build     func(a *dpopAttacker) []*http.Request
	status    int
	code      string
	nonceOnly bool // only against a target with nonces
}

func dpopAttacks() []dpopAttack {
	const proofErr, tokenErr = "invalid_dpop_proof", "invalid_token"
	one := func(r *http.Request) []*http.Request { return []*http.Request{r} }
	return []dpopAttack{
		{"control: a valid DPoP request", func(a *dpopAttacker) []*http.Request {
			return one(a.post("DPoP", a.bound, a.proof(a.bound)))
		}, 200, "", false},
		{"RFC 9449 §11.1 replayed proof", func(a *dpopAttacker) []*http.Request {
			p := a.proof(a.bound)
			return []*http.Request{a.post("DPoP", a.bound, p), a.post("DPoP", a.bound, p)}
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 proof for another URL (htu)", func(a *dpopAttacker) []*http.Request {
			return one(a.post("DPoP", a.bound, a.proofBy(a.honest, http.MethodPost, strings.TrimSuffix(a.tg.resource, "/mcp")+"/other", a.bound)))
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 proof for another method (htm)", func(a *dpopAttacker) []*http.Request {
			return one(a.post("DPoP", a.bound, a.proofBy(a.honest, http.MethodGet, a.tg.resource, a.bound)))
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 htu of a spoofed Host header", func(a *dpopAttacker) []*http.Request {
			r := a.post("DPoP", a.bound, a.proofBy(a.honest, http.MethodPost, "https://evil.example/mcp", a.bound))
			r.Host = "evil.example"
			return one(r)
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 proof for another token (ath)", func(a *dpopAttacker) []*http.Request {
			return one(a.post("DPoP", a.bound, a.proof(a.unbound)))
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 proof without ath", func(a *dpopAttacker) []*http.Request {
			return one(a.post("DPoP", a.bound, a.proof("")))
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 stale proof", func(a *dpopAttacker) []*http.Request {
			old := newProverAt(a.t, func() time.Time { return a.tg.now().Add(-6 * time.Minute) })
			return one(a.post("DPoP", a.bound, a.proofBy(old, http.MethodPost, a.tg.resource, a.bound)))
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 proof from the future", func(a *dpopAttacker) []*http.Request {
			future := newProverAt(a.t, func() time.Time { return a.tg.now().Add(10 * time.Minute) })
			return one(a.post("DPoP", a.bound, a.proofBy(future, http.MethodPost, a.tg.resource, a.bound)))
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 tampered signature", func(a *dpopAttacker) []*http.Request {
			p := a.proof(a.bound)
			i := strings.LastIndexByte(p, '.') + 2
			p = p[:i] + string("AB"[(strings.IndexByte("AB", p[i])+1)%2]) + p[i+1:]
			return one(a.post("DPoP", a.bound, p))
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 alg none", func(a *dpopAttacker) []*http.Request {
			claims := oauthtest.MustJSON(a.t, a.claims(a.bound))
			p := oauthtest.Unsigned(a.t, map[string]any{"typ": "dpop+jwt", "jwk": a.honestJWK()}, claims)
			return one(a.post("DPoP", a.bound, p))
		}, 401, proofErr, false},
		{"RFC 9449 §11.6 symmetric alg (HS256 keyed with the public key)", func(a *dpopAttacker) []*http.Request {
			jwk := a.honestJWK()
			secret := oauthtest.MustJSON(a.t, jwk)
			p := oauthtest.SignRaw(a.t, secret, map[string]any{"typ": "dpop+jwt", "alg": "HS256", "jwk": jwk}, a.claims(a.bound))
			return one(a.post("DPoP", a.bound, p))
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 private key in the jwk header", func(a *dpopAttacker) []*http.Request {
			k := oauthtest.NewKey(a.t, oauthtest.ES256, "x")
			tok := a.tg.token(oauthtest.Must(dpop.JKT(k.Public())))
			a.tg.sec.Add(tok)
			claims := a.claims(tok)
			p := oauthtest.SignRaw(a.t, k.Signer, map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": oauthtest.JWKMap(a.t, k.Signer.(*ecdsa.PrivateKey))}, claims)
			return one(a.post("DPoP", tok, p))
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 wrong typ", func(a *dpopAttacker) []*http.Request {
			k := oauthtest.NewKey(a.t, oauthtest.ES256, "x")
			tok := a.tg.token(oauthtest.Must(dpop.JKT(k.Public())))
			a.tg.sec.Add(tok)
			p := oauthtest.SignRaw(a.t, k.Signer, map[string]any{"typ": "JWT", "alg": "ES256", "jwk": oauthtest.JWKMap(a.t, k.Public())}, a.claims(tok))
			return one(a.post("DPoP", tok, p))
		}, 401, proofErr, false},
		{"RFC 9449 §6 token bound to another key", func(a *dpopAttacker) []*http.Request {
			other := a.tg.token(newProverAt(a.t, a.tg.now).JKT())
			a.tg.sec.Add(other)
			return one(a.post("DPoP", other, a.proof(other)))
		}, 401, tokenErr, false},
		{"RFC 9449 §6 stolen token with the thief's own proof, after the owner's request", func(a *dpopAttacker) []*http.Request {
			thief := newProverAt(a.t, a.tg.now)
			return []*http.Request{a.post("DPoP", a.bound, a.proof(a.bound)),
				a.post("DPoP", a.bound, a.proofBy(thief, http.MethodPost, a.tg.resource, a.bound))}
		}, 401, tokenErr, false},
		{"RFC 9449 §7.1 bound token without a proof", func(a *dpopAttacker) []*http.Request {
			return one(a.post("DPoP", a.bound))
		}, 401, proofErr, false},
		{"RFC 9449 §7.1 cached bound token without a proof", func(a *dpopAttacker) []*http.Request {
			return []*http.Request{a.post("DPoP", a.bound, a.proof(a.bound)), a.post("DPoP", a.bound)}
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 two DPoP headers", func(a *dpopAttacker) []*http.Request {
			return one(a.post("DPoP", a.bound, a.proof(a.bound), a.proof(a.bound)))
		}, 401, proofErr, false},
		{"RFC 9449 §4.3 two proofs in one DPoP header", func(a *dpopAttacker) []*http.Request {
			return one(a.post("DPoP", a.bound, a.proof(a.bound)+", "+a.proof(a.bound)))
		}, 401, proofErr, false},
		{"RS-18 bound token as Bearer, with a proof", func(a *dpopAttacker) []*http.Request {
			return one(a.post("Bearer", a.bound, a.proof(a.bound)))
		}, 401, tokenErr, false},
		{"RS-18 cached bound token as Bearer", func(a *dpopAttacker) []*http.Request {
			return []*http.Request{a.post("DPoP", a.bound, a.proof(a.bound)), a.post("Bearer", a.bound)}
		}, 401, tokenErr, false},
		{"unbound token with the DPoP scheme", func(a *dpopAttacker) []*http.Request {
			return one(a.post("DPoP", a.unbound, a.proof(a.unbound)))
		}, 401, tokenErr, false},
		{"unbound token as Bearer (no downgrade)", func(a *dpopAttacker) []*http.Request {
			return one(a.post("Bearer", a.unbound))
		}, 401, tokenErr, false},
		{"no credentials", func(a *dpopAttacker) []*http.Request {
			return one(a.post("", ""))
		}, 401, "", false},
		{"RFC 9449 §7.1 malformed DPoP credentials", func(a *dpopAttacker) []*http.Request {
			return one(a.post("DPoP", "a b", a.proof(a.bound)))
		}, 400, "invalid_request", false},
		{"RFC 9449 §9 proof without the server's nonce", func(a *dpopAttacker) []*http.Request {
			a.nonce = ""
			return one(a.post("DPoP", a.bound, a.proof(a.bound)))
		}, 401, "use_dpop_nonce", true},
		{"RFC 9449 §9 forged nonce", func(a *dpopAttacker) []*http.Request {
			a.nonce = strings.Repeat("A", 43)
			return one(a.post("DPoP", a.bound, a.proof(a.bound)))
		}, 401, "use_dpop_nonce", true},
	}
}

// honestJWK is the public JWK of the honest client's key, taken from one
// of its proofs.
func (a *dpopAttacker) honestJWK() map[string]any {
	h, _ := oauthtest.DecodeJWS(a.t, a.proof(a.bound))
	return h["jwk"].(map[string]any)
}

// runDPoPAttacks plays every attack against tg: each allowed setup
// request reaches the MCP server, the attack's request gets the expected
// status and DPoP challenge and does not reach it, a use_dpop_nonce
// answer carries a fresh DPoP-Nonce, and no response carries a token.
func runDPoPAttacks(t *testing.T, tg *dpopTarget) {
	for _, at := range dpopAttacks() {
		if at.nonceOnly && !tg.nonces {
			continue
		}
		t.Run(at.name, func(t *testing.T) {
			a := newDPoPAttacker(t, tg)
			reqs := at.build(a)
			for i, req := range reqs {
				before := tg.served()
				res := a.send(req)
				reached := tg.served() - before
				if i < len(reqs)-1 || at.status == 200 {
					if res.status != 200 || reached != 1 {
						t.Fatalf("honest request %d: status %d, reached the server %d times (%s)", i, res.status, reached, clip(res.body, 200))
					}
					continue
				}
				if res.status != at.status {
					t.Fatalf("status %d, want %d (%q %s)", res.status, at.status, res.header.Values("WWW-Authenticate"), clip(res.body, 200))
				}
				if reached != 0 {
					t.Errorf("the refused request reached the MCP server")
				}
				if res.challenge == nil {
					t.Fatalf("no DPoP challenge: %q", res.header.Values("WWW-Authenticate"))
				}
				if got := res.challenge.Value(oauthmeta.ParamError); got != at.code {
					t.Errorf("challenge error %q, want %q", got, at.code)
				}
				if at.code == "use_dpop_nonce" && res.header.Get(dpop.NonceHeader) == "" {
					t.Errorf("RFC 9449 §9: use_dpop_nonce without a DPoP-Nonce header")
				}
			}
		})
	}
}

// TestDPoPAttacksRS plays the DPoP attacks against resource's middleware
// in DPoPRequired mode, in process on the attack network, with and
// without server nonces (RFC 9449 §4.3, §6, §7, §9, §11; RS-18).
func TestDPoPAttacksRS(t *testing.T) {
	t.Parallel()
	for _, nonces := range []bool{false, true} {
		name := "resource middleware, DPoP required"
		if nonces {
			name += ", nonces"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newRSEnvWith(t, func(c *resource.Config) {
				c.DPoP = resource.DPoPConfig{Mode: resource.DPoPRequired}
				if nonces {
					c.DPoP.NonceKey = []byte(strings.Repeat("k", 32))
				}
			})
			tg := &dpopTarget{name: name, resource: mcpResource, client: e.net.Client(), now: e.clock.Now, nonces: nonces, sec: e.sec,
				served: e.served.Load,
				token: func(jkt string) string {
					return e.token(func(c *oauthtest.AccessToken) {
						c.ID = "jti-" + jkt
						if jkt != "" {
							c.Extra = map[string]any{"cnf": map[string]any{"jkt": jkt}}
						}
					})
				}}
			runDPoPAttacks(t, tg)
			e.sec.Check(t)
		})
	}
}

// TestDPoPAttacksProtect plays the same DPoP attacks against a real
// `mcpauth protect --dpop required` process (built from this module), with
// and without --dpop-nonce, in front of a go-sdk MCP server, trusting a
// local issuer whose keys it fetches over plain http on 127.0.0.1
// (--insecure-http). The proxy's clock is the system clock, so the proofs'
// iat is too. Besides each attack's answer: no credential reached the
// upstream (RS-19), the process logged no token, and it stops cleanly.
func TestDPoPAttacksProtect(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds ./cmd/mcpauth")
	}
	bin, err := loadgen.BuildMcpauth(t.Context(), t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, nonces := range []bool{false, true} {
		name := "mcpauth protect --dpop required"
		if nonces {
			name += " --dpop-nonce"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tg, stop := startProtectDPoP(t, bin, name, nonces)
			runDPoPAttacks(t, tg)
			stop()
			tg.sec.Check(t)
		})
	}
}

// startProtectDPoP starts `mcpauth protect --dpop required` (with
// --dpop-nonce if nonces) and returns it as a target, and the function
// that stops it and checks what it and its upstream saw.
func startProtectDPoP(t *testing.T, bin, name string, nonces bool) (*dpopTarget, func()) {
	t.Helper()
	key := oauthtest.NewKey(t, oauthtest.ES256, "as-1")
	issuer := oauthtest.NewPlainJWKSServer(t, key)
	up := loadgen.NewUpstream()
	t.Cleanup(up.Close)
	addr, err := loadgen.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	resourceURL := "http://" + addr + "/mcp"
	args := []string{"protect", "--addr", addr, "--upstream", up.URL, "--issuer", issuer.Issuer, "--resource", resourceURL,
		"--insecure-http", "--require", "mcp:tools", "--dpop", "required", "--log-level", "info"}
	if nonces {
		args = append(args, "--dpop-nonce")
	}
	p, err := loadgen.StartCommand(t.Context(), loadgen.CommandConfig{Binary: bin, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	var now clock.Func // the system clock: the proxy's own
	var jti atomic.Int64
	tg := &dpopTarget{name: name, resource: resourceURL, client: &http.Client{Timeout: 10 * time.Second}, now: now.Now,
		nonces: nonces, sec: &secrets{}, served: up.Served.Load,
		token: func(jkt string) string {
			c := oauthtest.AccessToken{Issuer: issuer.Issuer, Subject: "user-1", Audience: []string{resourceURL}, ClientID: "app",
				Scope: "mcp:tools", ID: fmt.Sprintf("jti-%d", jti.Add(1)), IssuedAt: now.Now(), Expiry: now.Now().Add(time.Hour)}
			if jkt != "" {
				c.Extra = map[string]any{"cnf": map[string]any{"jkt": jkt}}
			}
			return key.Mint(t, c)
		}}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := p.Stop(10 * time.Second); err != nil {
				t.Errorf("protect did not stop cleanly: %v\n%s", err, p.Tail())
			}
			tg.sec.Seen(p.Tail())
			if n := up.Leaked.Load(); n != 0 {
				t.Errorf("RS-19: %d requests reached the upstream with a credential or without an identity", n)
			}
		})
	}
	t.Cleanup(stop)
	return tg, stop
}
