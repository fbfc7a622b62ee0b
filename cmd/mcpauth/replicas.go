package main

import (
	"fmt"
	"os"

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

// dpopConfig applies --dpop and --redis-url to cfg and returns the
// function that closes the Redis client, if any.
func (f *protectFlags) dpopConfig(cfg *resource.Config) (func(), error) {
	switch f.dpop {
	case "off", "":
		if f.redisURL != "" {
			return nil, fmt.Errorf("--redis-url keeps DPoP proofs: it needs --dpop allowed or required")
		}
		if f.dpopAlgs != "" {
			return nil, fmt.Errorf("--dpop-algs needs --dpop allowed or required")
		}
		return func() {}, nil
	case "allowed":
		cfg.DPoP.Mode = resource.DPoPAllowed
	case "required":
		cfg.DPoP.Mode = resource.DPoPRequired
	default:
		return nil, fmt.Errorf("--dpop: %q is not off, allowed or required", f.dpop)
	}
	cfg.DPoP.Algorithms = fields(f.dpopAlgs) // checked by resource.New
	if f.redisURL == "" {
		return func() {}, nil
	}
	c, err := openRedis("--redis-url", f.redisURL)
	if err != nil {
		return nil, err
	}
	cfg.DPoP.Replay = redisreplay.ForResource(c, "mcpauth:rs:"+cfg.Resource+":")
	return func() { _ = c.Close() }, nil
}
