package dpop_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
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
	other := &env{t: t, clk: e.clk, key: oauthtest.FixedP256(t, 11), v: e.v}
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
	forged := parts[0] + "." + oauthtest.B64JSON(t, e.claims(map[string]any{"jti": "third"})) + "." + parts[2]
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
	otherJKT, _ := dpop.JKT(&oauthtest.FixedP256(t, 3).PublicKey)
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
		{"short nonce key", dpop.VerifierConfig{NonceKey: []byte("short")}},
		{"nonce key and source", dpop.VerifierConfig{NonceKey: make([]byte, 32), Nonces: &dpop.HMACNonces{}}},
		{"nonce period without key", dpop.VerifierConfig{NoncePeriod: time.Minute}},
		{"nonce label without key", dpop.VerifierConfig{NonceLabel: "rs"}},
		{"nonce period under a second", dpop.VerifierConfig{NonceKey: make([]byte, 32), NoncePeriod: time.Millisecond}},
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
	if got := v.Algorithms(); !slices.Equal(got, dpop.DefaultAlgorithms()) {
		t.Fatalf("default Algorithms = %v, want %v", got, dpop.DefaultAlgorithms())
	}
	if n, err := v.Nonce(context.Background()); n != "" || err != nil {
		t.Fatalf("Nonce without a source = %q, %v", n, err)
	}
}

// TestVerifierNonceKey: NonceKey makes the Verifier issue HMAC nonces under
// its label and period, the same as an HMACNonces configured alike.
func TestVerifierNonceKey(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	now := func() time.Time { return time.Unix(1_800_000_000, 0) }
	v, err := dpop.NewVerifier(dpop.VerifierConfig{NonceKey: key, NonceLabel: "rs", NoncePeriod: time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Nonce(context.Background())
	if err != nil || got == "" {
		t.Fatalf("Nonce = %q, %v", got, err)
	}
	for _, tt := range []struct {
		label string
		ok    bool
	}{{"rs", true}, {"as", false}} {
		n, err := dpop.NewHMACNonces(dpop.HMACNonceConfig{Key: key, Label: tt.label, Period: time.Minute, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.CheckNonce(context.Background(), got); (err == nil) != tt.ok {
			t.Errorf("label %q: CheckNonce = %v, want accepted %v", tt.label, err, tt.ok)
		}
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

// TestVerifyForeignKeyNeverConsumesReplayEntry: a thief holding a stolen
// DPoP-bound token (RS-18, RFC 9449 §7.1, §11.1) signs valid proofs with
// their own key. With Request.JKT set to the token's cnf.jkt, every such
// proof fails with ErrKeyMismatch before the replay store is written, so a
// tiny store is never filled and the key's owner is still served.
func TestVerifyForeignKeyNeverConsumesReplayEntry(t *testing.T) {
	t.Parallel()
	const entries = 2
	e := newEnv(t, func(c *dpop.VerifierConfig) { c.MaxReplayEntries = entries })
	ownerJKT, err := dpop.JKT(&e.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	req := resourceReq()
	req.JKT = ownerJKT
	tests := []struct {
		name string
		key  byte
	}{
		{"thief key A", 21},
		{"thief key B", 22},
		{"thief key C", 23},
	}
	for _, tt := range tests {
		thief := &env{t: t, clk: e.clk, key: oauthtest.FixedP256(t, tt.key), v: e.v}
		for i := range 4 * entries { // more proofs than the store holds
			proof := thief.proof(nil, map[string]any{"jti": tt.name + string(rune('a'+i))})
			_, err := e.v.Verify(context.Background(), proof, req)
			if !errors.Is(err, dpop.ErrKeyMismatch) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidToken}) {
				t.Fatalf("%s proof %d: %v, want ErrKeyMismatch (invalid_token)", tt.name, i, err)
			}
		}
	}
	// The store is still empty: the owner gets exactly its capacity.
	for i := range entries {
		if _, err := e.v.Verify(context.Background(), e.proof(nil, map[string]any{"jti": "owner" + string(rune('a'+i))}), req); err != nil {
			t.Fatalf("owner proof %d after the flood: %v", i, err)
		}
	}
	// Without the binding the same foreign proofs would have consumed entries
	// (the behaviour this test guards against): the store is full now.
	if _, err := e.v.Verify(context.Background(), e.proof(nil, map[string]any{"jti": "owner-over"}), req); !errors.Is(err, dpop.ErrReplayCheckUnavailable) {
		t.Fatalf("proof beyond capacity: %v, want ErrReplayCheckUnavailable", err)
	}
}

// TestVerifyJKTCheckedAfterSignature: a proof that fails its own checks
// reports that failure, not the key mismatch, and a matching JKT changes
// nothing else.
func TestVerifyJKTCheckedAfterSignature(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	req := resourceReq()
	req.JKT = "not-the-thumbprint"
	if _, err := e.v.Verify(context.Background(), e.proof(nil, map[string]any{"htm": "GET"}), req); !errors.Is(err, dpop.ErrHTMMismatch) {
		t.Fatalf("bad proof with a foreign JKT: %v, want ErrHTMMismatch", err)
	}
	req.JKT, _ = dpop.JKT(&e.key.PublicKey)
	p, err := e.v.Verify(context.Background(), e.proof(nil, nil), req)
	if err != nil || p.JKT != req.JKT {
		t.Fatalf("matching JKT: %v, JKT %q", err, p.JKT)
	}
}
