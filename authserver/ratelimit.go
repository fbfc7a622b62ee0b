package authserver

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// RateLimit bounds request rates at the token, registration, introspection
// and revocation endpoints, per client IP address and per client_id, with
// token buckets (golang.org/x/time/rate). Over the limit, a request gets
// 429 with Retry-After. Zero fields take their defaults; math.Inf(1)
// disables a limit.
type RateLimit struct {
	// PerIP is requests per second per client IP. Zero means 10.
	PerIP float64
	// PerClient is token requests per second per client_id. Zero means 10.
	PerClient float64
	// Burst is the bucket size of both. Zero means 20.
	Burst int
	// MaxTracked bounds how many IPs or client_ids are tracked; the least
	// recently seen are forgotten first. Zero means 10000.
	MaxTracked int
}

func (r RateLimit) withDefaults() RateLimit {
	if r.PerIP == 0 {
		r.PerIP = 10
	}
	if r.PerClient == 0 {
		r.PerClient = 10
	}
	if r.Burst == 0 {
		r.Burst = 20
	}
	if r.MaxTracked == 0 {
		r.MaxTracked = 10000
	}
	return r
}

// limiterSet is a bounded map of token buckets keyed by IP or client_id.
type limiterSet struct {
	limit rate.Limit
	burst int
	max   int

	mu      sync.Mutex
	entries map[string]*limiterEntry
}

type limiterEntry struct {
	lim  *rate.Limiter
	seen time.Time
}

func newLimiterSet(perSecond float64, burst, maxTracked int) *limiterSet {
	l := rate.Limit(perSecond)
	if math.IsInf(perSecond, 1) {
		l = rate.Inf
	}
	return &limiterSet{limit: l, burst: burst, max: maxTracked, entries: make(map[string]*limiterEntry)}
}

// allow reports whether one more request for key is allowed at now, and if
// not, how long to wait.
func (ls *limiterSet) allow(key string, now time.Time) (bool, time.Duration) {
	if ls.limit == rate.Inf {
		return true, 0
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	e, ok := ls.entries[key]
	if !ok {
		if len(ls.entries) >= ls.max {
			ls.evict(now)
		}
		e = &limiterEntry{lim: rate.NewLimiter(ls.limit, ls.burst)}
		ls.entries[key] = e
	}
	e.seen = now
	r := e.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// evict drops entries idle long enough to have refilled, then, if still
// full, the least recently seen half.
func (ls *limiterSet) evict(now time.Time) {
	full := time.Duration(float64(ls.burst) / float64(ls.limit) * float64(time.Second))
	for k, e := range ls.entries {
		if now.Sub(e.seen) > full {
			delete(ls.entries, k)
		}
	}
	for len(ls.entries) >= ls.max {
		var oldestKey string
		var oldest time.Time
		for k, e := range ls.entries {
			if oldestKey == "" || e.seen.Before(oldest) {
				oldestKey, oldest = k, e.seen
			}
		}
		delete(ls.entries, oldestKey)
	}
}

// clientIP is the peer address of r. Forwarding headers are not trusted.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limitByIP wraps next with the per-IP limit.
func (s *Server) limitByIP(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := s.ipLimits.allow(clientIP(r), s.now()); !ok {
			s.writeRateLimited(w, wait)
			return
		}
		next(w, r)
	}
}

// allowClient applies the per-client limit; false means the response was
// written.
func (s *Server) allowClient(w http.ResponseWriter, clientID string) bool {
	if clientID == "" {
		return true
	}
	ok, wait := s.clientLimits.allow(clientID, s.now())
	if !ok {
		s.writeRateLimited(w, wait)
	}
	return ok
}

func (s *Server) writeRateLimited(w http.ResponseWriter, wait time.Duration) {
	secs := int64(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	s.writeJSON(w, http.StatusTooManyRequests, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "rate limit exceeded"))
}
