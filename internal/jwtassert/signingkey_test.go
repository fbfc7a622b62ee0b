package jwtassert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// wrapped is a crypto.Signer of another type, as a key in an HSM or KMS is.
type wrapped struct{ crypto.Signer }

func (w wrapped) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	return w.Signer.Sign(r, digest, opts)
}

// TestSigningKey: go-jose gets the key types it signs natively as they are
// (an *ed25519.PrivateKey as its value), and any other crypto.Signer
// wrapped as an opaque signer.
func TestSigningKey(t *testing.T) {
	t.Parallel()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	if got, ok := signingKey(ec).(*ecdsa.PrivateKey); !ok || got != ec {
		t.Fatalf("ECDSA key = %T, want the key itself", signingKey(ec))
	}
	if got, ok := signingKey(&ed).(ed25519.PrivateKey); !ok || !got.Equal(ed) {
		t.Fatalf("*ed25519.PrivateKey = %T, want its value", signingKey(&ed))
	}
	if _, ok := signingKey(wrapped{ec}).(jose.OpaqueSigner); !ok {
		t.Fatalf("wrapped signer = %T, want a jose.OpaqueSigner", signingKey(wrapped{ec}))
	}
}
