package dpop_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/dpop"
	"github.com/mcpauth/mcpauth/internal/jwtassert/replay"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

func TestVerifyRefusesReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	proof := e.proof(nil, map[string]any{"jti": "once"})
	if _, err := e.v.Verify(context.Background(), proof, resourceReq()); err != nil {
		t.Fatalf("first use: %v", err)
	}
	_, err := e.v.Verify(context.Background(), proof, resourceReq())
	if !errors.Is(err, dpop.ErrReplayedProof) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidDPoPProof}) {
		t.Fatalf("replayed proof: %v, want ErrReplayedProof", err)
	}
	// The same jti under another key is another proof.
	other := &env{t: t, clk: e.clk, key: fixedKey(t, 11), v: e.v}
	if _, err := e.v.Verify(context.Background(), other.proof(nil, map[string]any{"jti": "once"}), resourceReq()); err != nil {
		t.Fatalf("same jti, other key: %v", err)
	}
	// Once the proof is too old anyway, its jti is forgotten.
	e.clk.Advance(dpop.DefaultIATWindow + 2*time.Second)
	if _, err := e.v.Verify(context.Background(), proof, resourceReq()); !errors.Is(err, dpop.ErrStaleProof) {
		t.Fatalf("old proof: %v, want ErrStaleProof", err)
	}
}

func TestVerifyFailedProofDoesNotBurnJTI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	bad := e.proof(nil, map[string]any{"jti": "j", "htm": "GET"})
	if _, err := e.v.Verify(context.Background(), bad, resourceReq()); !errors.Is(err, dpop.ErrHTMMismatch) {
		t.Fatalf("bad proof: %v", err)
	}
	if _, err := e.v.Verify(context.Background(), e.proof(nil, map[string]any{"jti": "j"}), resourceReq()); err != nil {
		t.Fatalf("good proof with the same jti: %v", err)
	}
}

func TestVerifyKnownHeaderStillChecksSignature(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	if _, err := e.v.Verify(context.Background(), e.proof(nil, nil), resourceReq()); err != nil {
		t.Fatal(err) // the header is now cached
	}
	good := e.proof(nil, map[string]any{"jti": "second"})
	parts := strings.Split(good, ".")
	forged := parts[0] + "." + b64json(t, e.claims(map[string]any{"jti": "third"})) + "." + parts[2]
	if _, err := e.v.Verify(context.Background(), forged, resourceReq()); !errors.Is(err, dpop.ErrBadSignature) {
		t.Fatalf("payload swapped under a known header: %v, want ErrBadSignature", err)
	}
	stolen := parts[0] + "." + parts[1] + "." + strings.Split(e.proof(nil, nil), ".")[2]
	if _, err := e.v.Verify(context.Background(), stolen, resourceReq()); !errors.Is(err, dpop.ErrBadSignature) {
		t.Fatalf("signature of another proof: %v, want ErrBadSignature", err)
	}
	if _, err := e.v.Verify(context.Background(), good, resourceReq()); err != nil {
		t.Fatalf("genuine proof after the forgeries: %v", err)
	}
}

func TestVerifyReplayStoreFailureFailsClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *dpop.VerifierConfig) { c.MaxReplayEntries = 1 })
	if _, err := e.v.Verify(context.Background(), e.proof(nil, nil), resourceReq()); err != nil {
		t.Fatal(err)
	}
	_, err := e.v.Verify(context.Background(), e.proof(nil, map[string]any{"jti": "another"}), resourceReq())
	if !errors.Is(err, dpop.ErrReplayCheckUnavailable) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable}) {
		t.Fatalf("full replay cache: %v, want ErrReplayCheckUnavailable", err)
	}
	if !errors.Is(err, dpop.ErrReplayCheckUnavailable) {
		t.Fatal(err)
	}
	var _ replay.Store = failingStore{}
	e2 := newEnv(t, func(c *dpop.VerifierConfig) { c.Replay = failingStore{} })
	if _, err := e2.v.Verify(context.Background(), e2.proof(nil, nil), resourceReq()); !errors.Is(err, dpop.ErrReplayCheckUnavailable) {
		t.Fatalf("failing store: %v", err)
	}
}

type failingStore struct{}

func (failingStore) Use(context.Context, string, time.Time) error { return errors.New("store down") }

func TestVerifyNonceFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withNonces)
	ctx := context.Background()
	_, err := e.v.Verify(ctx, e.proof(nil, nil), resourceReq())
	if !dpop.IsNonceError(err) {
		t.Fatalf("first proof without nonce: %v, want a nonce error", err)
	}
	nonce, err := e.v.Nonce(ctx)
	if err != nil || nonce == "" {
		t.Fatalf("Nonce() = %q, %v", nonce, err)
	}
	p, err := e.v.Verify(ctx, e.proof(nil, map[string]any{"nonce": nonce}), resourceReq())
	if err != nil {
		t.Fatalf("retry with nonce: %v", err)
	}
	if p.Nonce != nonce {
		t.Fatalf("Proof.Nonce = %q, want %q", p.Nonce, nonce)
	}
	e.clk.Advance(11 * time.Minute) // two periods later the nonce is stale
	_, err = e.v.Verify(ctx, e.proof(nil, map[string]any{"nonce": nonce}), resourceReq())
	if !errors.Is(err, dpop.ErrNonceInvalid) {
		t.Fatalf("stale nonce: %v, want ErrNonceInvalid", err)
	}
}

func TestCheckBinding(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	p, err := e.v.Verify(context.Background(), e.proof(nil, nil), resourceReq())
	if err != nil {
		t.Fatal(err)
	}
	otherJKT, _ := dpop.JKT(&fixedKey(t, 3).PublicKey)
	tests := []struct {
		name    string
		jkt     string
		wantErr error
	}{
		{"token bound to this key", p.JKT, nil},
		{"token bound to another key", otherJKT, dpop.ErrKeyMismatch},
		{"unbound token", "", dpop.ErrKeyMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := p.CheckBinding(tt.jkt)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("CheckBinding = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidToken}) {
				t.Fatalf("key mismatch must map to invalid_token: %v", err)
			}
		})
	}
}

func TestNewVerifierRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  dpop.VerifierConfig
	}{
		{"alg none", dpop.VerifierConfig{Algorithms: []string{"none"}}},
		{"HS256", dpop.VerifierConfig{Algorithms: []string{"ES256", "HS256"}}},
		{"unknown alg", dpop.VerifierConfig{Algorithms: []string{"ES257"}}},
		{"negative window", dpop.VerifierConfig{IATWindow: -time.Second}},
		{"negative leeway", dpop.VerifierConfig{Leeway: -time.Second}},
		{"negative size", dpop.VerifierConfig{MaxProofSize: -1}},
		{"negative key cache", dpop.VerifierConfig{KeyCacheSize: -1}},
		{"negative replay entries", dpop.VerifierConfig{MaxReplayEntries: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := dpop.NewVerifier(tt.cfg); err == nil {
				t.Fatal("NewVerifier accepted a bad config")
			}
		})
	}
}

func TestVerifierDefaults(t *testing.T) {
	t.Parallel()
	v, err := dpop.NewVerifier(dpop.VerifierConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Algorithms(); len(got) != 1 || got[0] != "ES256" {
		t.Fatalf("default Algorithms = %v, want [ES256]", got)
	}
	if n, err := v.Nonce(context.Background()); n != "" || err != nil {
		t.Fatalf("Nonce without a source = %q, %v", n, err)
	}
}

func TestVerifyConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const n = 32
	proofs := make([]string, n)
	for i := range proofs {
		proofs[i] = e.proof(nil, map[string]any{"jti": strings.Repeat("j", i+1)})
	}
	errs := make(chan error, 2*n)
	for _, p := range append(proofs, proofs...) {
		go func() {
			_, err := e.v.Verify(context.Background(), p, resourceReq())
			errs <- err
		}()
	}
	var ok, replayed int
	for range 2 * n {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, dpop.ErrReplayedProof):
			replayed++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != n || replayed != n {
		t.Fatalf("accepted %d and refused %d as replays, want %d each", ok, replayed, n)
	}
}
