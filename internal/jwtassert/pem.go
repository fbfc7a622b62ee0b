package jwtassert

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/mcpauth/mcpauth/internal/jwa"
)

// ErrPrivateKey is wrapped by every error of [ParsePrivateKeyPEM].
var ErrPrivateKey = errors.New("jwtassert: unusable private key")

// maxPEMSize bounds the PEM input ParsePrivateKeyPEM reads.
const maxPEMSize = 64 << 10

// ParsePrivateKeyPEM parses the first private key in PEM data: PKCS #8
// ("PRIVATE KEY": ECDSA, RSA or Ed25519), SEC 1 ("EC PRIVATE KEY") or
// PKCS #1 ("RSA PRIVATE KEY"). "EC PARAMETERS" blocks are skipped, as
// OpenSSL writes one before an EC key. Encrypted PEM, RSA keys under 2048
// bits and curves other than P-256, P-384 and P-521 are refused. Errors never
// contain key material.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	if len(data) > maxPEMSize {
		return nil, fmt.Errorf("%w: PEM input too large", ErrPrivateKey)
	}
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("%w: no private key PEM block", ErrPrivateKey)
		}
		if block.Type == "EC PARAMETERS" {
			continue
		}
		if _, encrypted := block.Headers["Proc-Type"]; encrypted {
			return nil, fmt.Errorf("%w: encrypted PEM is not supported", ErrPrivateKey)
		}
		key, err := parseKeyBlock(block)
		if err != nil {
			return nil, err
		}
		if _, err := jwa.ForKey(key.Public()); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPrivateKey, err)
		}
		return key, nil
	}
}

func parseKeyBlock(block *pem.Block) (crypto.Signer, error) {
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: invalid PKCS #8 key", ErrPrivateKey)
		}
		// ECDSA, RSA and Ed25519 keys are signers; X25519 and ECDH are not.
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("%w: unsupported PKCS #8 key type", ErrPrivateKey)
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: invalid SEC 1 EC key", ErrPrivateKey)
		}
		return k, nil
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: invalid PKCS #1 RSA key", ErrPrivateKey)
		}
		return k, nil
	case "ENCRYPTED PRIVATE KEY":
		return nil, fmt.Errorf("%w: encrypted PKCS #8 is not supported", ErrPrivateKey)
	}
	return nil, fmt.Errorf("%w: PEM block is not a private key", ErrPrivateKey)
}
