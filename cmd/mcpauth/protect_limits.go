package main

import (
	"flag"
	"fmt"
	"math"

	"github.com/mcpauth/mcpauth/redislimit"
	"github.com/mcpauth/mcpauth/resource"
)

// limitsFlags are protect's per-identity rate limits (resource.RateLimit):
// a JSON file of rules, a shortcut for the overall limit of an identity,
// and the Redis that replicas share them on.
type limitsFlags struct {
	file     string
	perID    float64
	idBurst  int
	redisURL string
}

func (l *limitsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.file, "rate-limits", "", "JSON rate-limit file: per verified identity, overall and per method or tool (see resource.ParseRateLimit); over a limit, 429 with Retry-After")
	fs.Float64Var(&l.perID, "rate-per-identity", 0, "requests per second per verified identity (issuer, subject, client_id), every request (default: no limit, or the file's)")
	fs.IntVar(&l.idBurst, "rate-identity-burst", 0, "bucket size of --rate-per-identity (default: 10 × the rate, at least 1)")
	fs.StringVar(&l.redisURL, "rate-limit-redis-url", "", "keep the rate-limit buckets on Redis at this `redis://` URL, shared by every replica of this resource (env:VAR reads $VAR); unreachable Redis refuses requests with 503")
}

// apply sets cfg.RateLimit from the flags and returns the function that
// closes the Redis client, if any.
func (l *limitsFlags) apply(cfg *resource.Config) (func(), error) {
	var rl *resource.RateLimit
	if l.file != "" {
		var err error
		if rl, err = parseFile("--rate-limits", l.file, resource.ParseRateLimit); err != nil {
			return nil, err
		}
	}
	if l.idBurst != 0 && l.perID == 0 {
		return nil, fmt.Errorf("--rate-identity-burst needs --rate-per-identity")
	}
	if l.perID != 0 {
		if !(l.perID > 0) || math.IsInf(l.perID, 0) || l.idBurst < 0 {
			return nil, fmt.Errorf("--rate-per-identity %v: must be a positive number of requests per second", l.perID)
		}
		if rl == nil {
			rl = &resource.RateLimit{}
		}
		rl.Identity = resource.Rate{PerSecond: l.perID, Burst: l.idBurst}
		if rl.Identity.Burst == 0 {
			rl.Identity.Burst = max(1, int(math.Ceil(10*l.perID)))
		}
	}
	if l.redisURL == "" {
		cfg.RateLimit = rl
		return func() {}, nil
	}
	if rl == nil {
		return nil, fmt.Errorf("--rate-limit-redis-url needs --rate-limits or --rate-per-identity")
	}
	c, err := openRedis("--rate-limit-redis-url", l.redisURL)
	if err != nil {
		return nil, err
	}
	rl.Store = redislimit.New(c, "mcpauth:rl:"+cfg.Resource+":")
	cfg.RateLimit = rl
	return func() { _ = c.Close() }, nil
}
