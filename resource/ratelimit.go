package resource

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"time"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/ratelimit"
)

// DefaultRateLimitTracked bounds each table of [RateLimit] when
// MaxTracked is zero.
const DefaultRateLimitTracked = 100_000

// RateLimit bounds the requests of each verified identity: the token's
// issuer, subject and client_id together, never anything a caller chooses
// before its token is verified. Identity applies to every request of an
// identity; Methods to its requests of one JSON-RPC method, and Tools to
// its tools/call requests of one tool (a request may be counted by all
// three). Rules on methods or tools make the middleware read and scan the
// JSON-RPC body, as a [Policy] with such rules does. A refused request
// gets 429 Too Many Requests with Retry-After and a JSON-RPC error
// (code -32000, "rate limit exceeded", with data.retryAfter in seconds)
// and never reaches the wrapped handler. The JSON form is
//
//	{"identity": {"per_second": 5, "burst": 20},
//	 "methods": {"tools/list": {"per_second": 1, "burst": 5}},
//	 "tools": {"search": {"per_second": 0.2, "burst": 3}}}
//
// Each rule is a token bucket of Burst requests refilled at PerSecond
// (kept as GCRA, one time per key). In memory, each rule's table holds at
// most MaxTracked identities, forgetting the least recently used one,
// whose next request starts with a full bucket; with Store, replicas
// share the buckets.
type RateLimit struct {
	// Identity limits every request of an identity. The zero value sets
	// no such limit.
	Identity Rate `json:"identity,omitzero"`
	// Methods limits, per identity, the requests of a JSON-RPC method
	// ("tools/list", "tools/call").
	Methods map[string]Rate `json:"methods,omitempty"`
	// Tools limits, per identity, the tools/call requests of a tool
	// (params.name).
	Tools map[string]Rate `json:"tools,omitempty"`
	// MaxTracked bounds how many identities each rule's in-memory table
	// tracks. Zero means [DefaultRateLimitTracked].
	MaxTracked int `json:"max_tracked,omitempty"`
	// Store, when set, keeps the buckets where every replica sees them
	// (package redislimit keeps them on Redis). An error from it refuses
	// the request with 503 (fail closed). Nil means in memory, in this
	// Verifier.
	Store RateLimitStore `json:"-"`
}

// Rate is one limit: PerSecond requests per second sustained, Burst at
// once. A zero Rate sets no limit; otherwise both must be positive.
type Rate struct {
	PerSecond float64 `json:"per_second"`
	Burst     int     `json:"burst"`
}

// RateLimitStore keeps rate-limit buckets shared by replicas.
type RateLimitStore interface {
	// Allow counts one request under key, limited by r, at now: it
	// reports whether the request is allowed and, if not, how long to
	// wait. key is a fixed-size digest of the identity and the rule.
	Allow(ctx context.Context, key string, r Rate, now time.Time) (bool, time.Duration, error)
}

// ParseRateLimit decodes a [RateLimit] from its JSON form strictly (no
// unknown or duplicate members) and validates it.
func ParseRateLimit(data []byte) (*RateLimit, error) {
	var rl RateLimit
	if err := jsonx.DecodeObjectStrict(data, &rl); err != nil {
		return nil, fmt.Errorf("%w: rate limit: %w", ErrInvalidConfig, err)
	}
	if err := rl.validate(); err != nil {
		return nil, err
	}
	return &rl, nil
}

func (r Rate) zero() bool { return r == Rate{} }

func (r Rate) check(where string) error {
	if r.zero() {
		return nil
	}
	if !(r.PerSecond > 0) || math.IsInf(r.PerSecond, 0) || r.Burst < 1 {
		return fmt.Errorf("%w: rate limit %s: per_second and burst must be positive", ErrInvalidConfig, where)
	}
	return nil
}

func (rl *RateLimit) validate() error {
	if rl.MaxTracked < 0 {
		return fmt.Errorf("%w: rate limit: negative max_tracked", ErrInvalidConfig)
	}
	if err := rl.Identity.check("identity"); err != nil {
		return err
	}
	for m, r := range rl.Methods {
		if err := r.check("method " + strconv.Quote(m)); err != nil {
			return err
		}
	}
	for t, r := range rl.Tools {
		if err := r.check("tool " + strconv.Quote(t)); err != nil {
			return err
		}
	}
	return nil
}

// ErrRateLimited: the request's identity has spent its budget (429 with
// Retry-After). The error is a [*RateLimitError].
var ErrRateLimited error = &class{msg: "resource: rate limit exceeded", status: 429}

// RateLimitError is the refusal of a rate-limited request.
type RateLimitError struct {
	// RetryAfter is how long the identity must wait.
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string { return "resource: rate limit exceeded" }

// Unwrap returns [ErrRateLimited].
func (e *RateLimitError) Unwrap() error { return ErrRateLimited }

// limitRule is one rule of the compiled limits.
type limitRule struct {
	name  string // "*", "m:<method>" or "t:<tool>": part of a store key
	rate  Rate
	table *ratelimit.Table[uint64] // nil with a store
}

// limiter is the compiled [RateLimit].
type limiter struct {
	seed      maphash.Seed
	identity  *limitRule
	methods   map[string]*limitRule
	tools     map[string]*limitRule
	needsBody bool
	store     RateLimitStore
}

func newLimiter(rl *RateLimit) (*limiter, error) {
	if rl == nil {
		return nil, nil
	}
	if err := rl.validate(); err != nil {
		return nil, err
	}
	max := cmp.Or(rl.MaxTracked, DefaultRateLimitTracked)
	l := &limiter{seed: maphash.MakeSeed(), store: rl.Store, methods: map[string]*limitRule{}, tools: map[string]*limitRule{}}
	rule := func(name string, r Rate) *limitRule {
		lr := &limitRule{name: name, rate: r}
		if l.store == nil {
			lr.table = ratelimit.New[uint64](ratelimit.Rate{PerSecond: r.PerSecond, Burst: r.Burst}, max)
		}
		return lr
	}
	if !rl.Identity.zero() {
		l.identity = rule("*", rl.Identity)
	}
	for m, r := range rl.Methods {
		if !r.zero() {
			l.methods[m] = rule("m:"+m, r)
		}
	}
	for t, r := range rl.Tools {
		if !r.zero() {
			l.tools[t] = rule("t:"+t, r)
		}
	}
	l.needsBody = len(l.methods)+len(l.tools) > 0
	return l, nil
}

// identityOf is the text that names a verified identity: issuer, subject
// and client_id, each length-prefixed so that no two identities share it.
func identityOf(info *TokenInfo) string {
	return strconv.Itoa(len(info.Issuer)) + ":" + info.Issuer + strconv.Itoa(len(info.Subject)) + ":" + info.Subject + info.ClientID
}

// check counts the request of info (and, when the body was scanned, its
// operation op) against every rule that applies.
func (l *limiter) check(ctx context.Context, info *TokenInfo, op *mcpMessage, now time.Time) error {
	rules := [3]*limitRule{l.identity}
	if op != nil && op.hasMethod {
		rules[1] = l.methods[string(op.method)]
		if string(op.method) == "tools/call" && op.hasName {
			rules[2] = l.tools[string(op.name)]
		}
	}
	id := identityOf(info)
	var digest string
	for _, r := range rules {
		if r == nil {
			continue
		}
		var (
			ok   bool
			wait time.Duration
		)
		if r.table != nil {
			ok, wait = r.table.Allow(maphash.String(l.seed, id), now)
		} else {
			if digest == "" {
				sum := sha256.Sum256([]byte(id))
				digest = hex.EncodeToString(sum[:])
			}
			var err error
			if ok, wait, err = l.store.Allow(ctx, digest+"/"+r.name, r.rate, now); err != nil {
				return errors.Join(errRateLimitStore, err)
			}
		}
		if !ok {
			return &RateLimitError{RetryAfter: wait}
		}
	}
	return nil
}

// tracked is the number of identities the in-memory tables hold, for tests.
func (l *limiter) tracked() (n int) {
	for _, r := range append(append([]*limitRule{l.identity}, values(l.methods)...), values(l.tools)...) {
		if r != nil && r.table != nil {
			n += r.table.Len()
		}
	}
	return n
}

func values(m map[string]*limitRule) []*limitRule {
	out := make([]*limitRule, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
