package authserver

import (
	"cmp"
	"hash/maphash"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/mcpauth/mcpauth/internal/clientaddr"
	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/ratelimit"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// RateLimit bounds request rates at the token, registration, introspection
// and revocation endpoints and at the browser endpoints (authorization,
// consent form, upstream login callback) with token buckets
// (GCRA, one time per key). Over a limit, a request gets 429 with
// Retry-After: a JSON error at the back-channel endpoints, the HTML error
// page at the browser endpoints (never a redirect to the client, whose
// request has not been looked at). Zero fields take their defaults;
// math.Inf(1) disables a limit; negative values are refused.
//
// Requests count by client address: the connection's peer, or behind
// load balancers and reverse proxies the address they forwarded the
// request for ([Config.TrustedProxies]; without it, every client behind
// a proxy shares the proxy's buckets). An IPv6 address counts by its /64
// prefix, the smallest block a subscriber or site is usually given, so a
// host cannot multiply its budget, or cycle the bounded tables, with the
// 2^64 addresses of one /64. An IPv4-mapped IPv6 address counts as the
// IPv4 address.
//
// Four kinds of bucket apply:
//
//   - per client address, to every request at the browser endpoints
//     ([RateLimit.PerIPBrowser], [RateLimit.BrowserBurst]): each
//     authorization request that shows a consent page or starts an
//     upstream login saves a pending authorization for 10 minutes, and
//     the table of them holds [MaxPendingAuthorizations], so one address
//     may save at most BrowserBurst + 600*PerIPBrowser of them (1300 by
//     default, under a seventh of the table) and a flood from one
//     address neither fills the table nor pushes out other users'
//     logins;
//   - per client address, to every request at the other endpoints;
//   - per (client address, client_id named in the request), to every
//     token, introspection and revocation request, before the client
//     authenticates: failed guesses are throttled per address, and
//     requests from other addresses naming a client never spend the
//     buckets of that client's own address;
//   - per client_id, only once a confidential client has authenticated
//     with its secret or key. A public client (auth method none) proves
//     nothing by naming its client_id, so it has no per-client bucket
//     that anyone could spend in its name: its requests are bounded per
//     address.
type RateLimit struct {
	// PerIP is requests per second per client address at the token,
	// registration, introspection and revocation endpoints. Zero means 10.
	PerIP float64
	// PerClient is requests per second per (client address, client_id)
	// pair and per authenticated confidential client_id. Zero means 10.
	PerClient float64
	// Burst is the bucket size of the per-address, per-(address,
	// client_id) and per-client buckets. Zero means 20.
	Burst int
	// PerIPBrowser is requests per second per client address at the
	// browser endpoints (GET /authorize, POST /consent, the upstream login
	// callback). Zero means 2: a login takes two or three such requests,
	// so an address (a household or an office behind one NAT) may
	// sustain a login every second or so once its burst is spent.
	PerIPBrowser float64
	// BrowserBurst is the bucket size of the browser-endpoint buckets.
	// Zero means 100: some thirty logins at once from one address.
	BrowserBurst int
	// MaxTracked bounds how many keys each kind of bucket tracks; past it
	// the least recently used key is forgotten (its next request starts
	// with a full bucket). Zero means 10000.
	MaxTracked int
}

func (r RateLimit) withDefaults() RateLimit {
	r.PerIP = cmp.Or(r.PerIP, 10)
	r.PerClient = cmp.Or(r.PerClient, 10)
	r.Burst = cmp.Or(r.Burst, 20)
	r.PerIPBrowser = cmp.Or(r.PerIPBrowser, 2)
	r.BrowserBurst = cmp.Or(r.BrowserBurst, 100)
	r.MaxTracked = cmp.Or(r.MaxTracked, 10000)
	return r
}

// validate refuses negative or NaN rates, a negative burst and a negative
// bound (after withDefaults, zero has become the default).
func (r RateLimit) validate() error {
	switch {
	case !(r.PerIP > 0):
		return configErr("RateLimit.PerIP", "must be positive")
	case !(r.PerClient > 0):
		return configErr("RateLimit.PerClient", "must be positive")
	case r.Burst < 1:
		return configErr("RateLimit.Burst", "must be positive")
	case !(r.PerIPBrowser > 0):
		return configErr("RateLimit.PerIPBrowser", "must be positive")
	case r.BrowserBurst < 1:
		return configErr("RateLimit.BrowserBurst", "must be positive")
	case r.MaxTracked < 1:
		return configErr("RateLimit.MaxTracked", "must be positive")
	}
	return nil
}

// limiterSet is a bounded table of buckets, one per key, that forgets the
// least recently used key when full: the module's rate-limit table
// (internal/ratelimit), whose lookup, insert and eviction are O(1), so a
// flood of new keys costs each request the same whatever the table holds.
type limiterSet[K comparable] struct {
	entries *ratelimit.Table[K]
}

// newLimiterSet returns a table of at most maxTracked keys (validated
// positive by [RateLimit.validate]) whose buckets refill at perSecond
// (+Inf: no limit) and hold burst requests.
func newLimiterSet[K comparable](perSecond float64, burst, maxTracked int) *limiterSet[K] {
	return &limiterSet[K]{entries: ratelimit.New[K](ratelimit.Rate{PerSecond: perSecond, Burst: burst}, maxTracked)}
}

// allow reports whether one more request for key is allowed at now, and if
// not, how long to wait. It marks key as the most recently used.
func (ls *limiterSet[K]) allow(key K, now time.Time) (bool, time.Duration) {
	return ls.entries.Allow(key, now)
}

// tracked is the number of keys in the table.
func (ls *limiterSet[K]) tracked() int {
	return ls.entries.Len()
}

// attemptKey is the key of the per-(address, client_id) buckets. The
// client_id is hashed with the server's seed, so a key stays small however
// long the claimed client_id is; a collision (2^-64 for two given ids,
// unpredictable without the seed) would only merge two buckets of one
// address.
type attemptKey struct {
	addr   netip.Addr
	client uint64
}

// rateLimits are the server's four bucket tables (see [RateLimit]) and
// the rules that apply them.
type rateLimits struct {
	seed     maphash.Seed
	browser  *limiterSet[netip.Addr]
	ip       *limiterSet[netip.Addr]
	attempts *limiterSet[attemptKey]
	clients  *limiterSet[string]
	now      clock.Func
	addrs    *clientaddr.Resolver // of Config.TrustedProxies
}

// newRateLimits returns the tables of rl, validated; addrs finds the
// address a request counts by.
func newRateLimits(rl RateLimit, now clock.Func, addrs *clientaddr.Resolver) *rateLimits {
	return &rateLimits{
		seed:     maphash.MakeSeed(),
		browser:  newLimiterSet[netip.Addr](rl.PerIPBrowser, rl.BrowserBurst, rl.MaxTracked),
		ip:       newLimiterSet[netip.Addr](rl.PerIP, rl.Burst, rl.MaxTracked),
		attempts: newLimiterSet[attemptKey](rl.PerClient, rl.Burst, rl.MaxTracked),
		clients:  newLimiterSet[string](rl.PerClient, rl.Burst, rl.MaxTracked),
		now:      now,
		addrs:    addrs,
	}
}

// addrKey is the key of the buckets of the client address a: a itself,
// or the /64 prefix of an IPv6 address. Requests whose peer is no IP
// address (the zero netip.Addr) share one key.
func addrKey(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// bucketKey is the key of the per-address buckets of r: the address of
// the client that sent r, its peer or with [Config.TrustedProxies] the
// client its proxies forwarded it for. Every use of a request's source
// address goes through it.
func (l *rateLimits) bucketKey(r *http.Request) netip.Addr {
	return addrKey(l.addrs.Addr(r))
}

// byIP wraps next with the per-address limit.
func (l *rateLimits) byIP(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := l.ip.allow(l.bucketKey(r), l.now.Now()); !ok {
			writeRateLimited(w, wait)
			return
		}
		next(w, r)
	}
}

// browserByIP wraps a browser endpoint's handler with the per-address
// browser limit. A refused request gets 429, Retry-After and the HTML
// error page that page renders, before anything of it is read: it is
// neither validated nor redirected to the client it names.
func (l *rateLimits) browserByIP(next http.HandlerFunc, page func(http.ResponseWriter, *http.Request, int, *oauthmeta.Error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := l.browser.allow(l.bucketKey(r), l.now.Now()); !ok {
			setRetryAfter(w, wait)
			page(w, r, http.StatusTooManyRequests, oauthErr(oauthmeta.CodeTemporarilyUnavailable,
				"too many requests from your network address; try again in a moment"))
			return
		}
		next(w, r)
	}
}

// allowAttempt applies the per-(address, client_id) limit to a token,
// introspection or revocation request before its client authenticates,
// keyed by the client_id the request names (none is a client_id of its
// own); false means the response was written.
func (l *rateLimits) allowAttempt(w http.ResponseWriter, r *http.Request, form url.Values) bool {
	key := attemptKey{addr: l.bucketKey(r), client: maphash.String(l.seed, claimedClientID(r, form))}
	ok, wait := l.attempts.allow(key, l.now.Now())
	if !ok {
		writeRateLimited(w, wait)
	}
	return ok
}

// allowClient applies the per-client limit to a request whose client has
// just authenticated; false means the response was written. Only
// confidential clients count: a public client's client_id is no secret, so
// a per-client bucket for it could be spent by anyone (its requests stay
// bounded per address by allowAttempt).
func (l *rateLimits) allowClient(w http.ResponseWriter, c *Client) bool {
	if c == nil || c.public() {
		return true
	}
	ok, wait := l.clients.allow(c.ID, l.now.Now())
	if !ok {
		writeRateLimited(w, wait)
	}
	return ok
}

func writeRateLimited(w http.ResponseWriter, wait time.Duration) {
	setRetryAfter(w, wait)
	writeJSON(w, http.StatusTooManyRequests, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "rate limit exceeded"))
}

// setRetryAfter sets Retry-After to wait in whole seconds, at least one.
func setRetryAfter(w http.ResponseWriter, wait time.Duration) {
	secs := int64(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
}
