package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/mcpauth/mcpauth/redisreplay"
	"github.com/mcpauth/mcpauth/resource"
)

// openRedis opens the Redis client a --redis-url flag names (env:VAR reads
// the URL from $VAR).
func openRedis(flagName, v string) (*redis.Client, error) {
	u, err := secretValue(flagName, v, os.Getenv)
	if err != nil {
		return nil, err
	}
	c, err := redisreplay.NewClient(u)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	return c, nil
}

// dpopConfig applies --dpop, --dpop-algs, --dpop-nonce, --dpop-nonce-key and
// --redis-url to cfg and returns the Redis client, if any, which the
// caller closes.
func (f *protectFlags) dpopConfig(cfg *resource.Config) (*redis.Client, error) {
	switch f.dpop {
	case "off", "":
		if f.redisURL != "" {
			return nil, fmt.Errorf("--redis-url keeps DPoP proofs: it needs --dpop allowed or required")
		}
		if f.dpopNonce || f.dpopNonceKey != "" {
			return nil, fmt.Errorf("--dpop-nonce and --dpop-nonce-key need --dpop allowed or required")
		}
		if f.dpopAlgs != "" {
			return nil, fmt.Errorf("--dpop-algs needs --dpop allowed or required")
		}
		return nil, nil
	case "allowed":
		cfg.DPoP.Mode = resource.DPoPAllowed
	case "required":
		cfg.DPoP.Mode = resource.DPoPRequired
	default:
		return nil, fmt.Errorf("--dpop: %q is not off, allowed or required", f.dpop)
	}
	var err error
	if cfg.DPoP.NonceKey, err = parseDPoPNonceKey(f.dpopNonce, f.dpopNonceKey); err != nil {
		return nil, err
	}
	if f.dpopNonce && cfg.DPoP.NonceKey == nil { // a random key for this process
		cfg.DPoP.NonceKey = make([]byte, 32)
		if _, err := rand.Read(cfg.DPoP.NonceKey); err != nil {
			return nil, err
		}
	}
	cfg.DPoP.Algorithms = fields(f.dpopAlgs) // checked by resource.New
	if f.redisURL == "" {
		return nil, nil
	}
	c, err := openRedis("--redis-url", f.redisURL)
	if err != nil {
		return nil, err
	}
	cfg.DPoP.Replay = redisreplay.New(c, "mcpauth:rs:"+cfg.Resource+":")
	return c, nil
}

// registerDPoPNonceKey declares --dpop-nonce-key, the same for the
// authorization server and the resource.
func registerDPoPNonceKey(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "dpop-nonce-key", "", "with --dpop-nonce: base64 of at least 32 random bytes authenticating the nonces, the same on every replica (env:VAR reads $VAR; default: random per process)")
}

// parseDPoPNonceKey reads a --dpop-nonce-key value, the key of the
// stateless HMAC nonces (RFC 9449 §9) --dpop-nonce asks for: base64 of at
// least 32 bytes, or env:VAR naming a variable holding it; nil without one.
func parseDPoPNonceKey(nonce bool, raw string) ([]byte, error) {
	switch {
	case raw == "":
		return nil, nil
	case !nonce:
		return nil, errors.New("--dpop-nonce-key needs --dpop-nonce")
	}
	v, err := secretValue("--dpop-nonce-key", raw, os.Getenv)
	if err != nil {
		return nil, err
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil || len(k) < 32 {
		return nil, errors.New("--dpop-nonce-key: want base64 of at least 32 bytes")
	}
	return k, nil
}
