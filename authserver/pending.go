package authserver

import (
	"crypto/subtle"
	"sync"
	"time"
)

// Limits of the consent step.
const (
	maxPending = 10000
	pendingTTL = 10 * time.Minute
)

// pendingAuth is a validated authorization request waiting for the user's
// decision on the consent page. It is single-use and bound to the browser
// that loaded the page.
type pendingAuth struct {
	req     *authRequest
	csrf    string
	browser string
	expires time.Time
}

// pendingStore holds pending consent decisions in memory, bounded in size
// and lifetime. It is safe for concurrent use.
type pendingStore struct {
	mu  sync.Mutex
	max int
	m   map[string]*pendingAuth
}

func newPendingStore(limit int) *pendingStore {
	return &pendingStore{max: limit, m: make(map[string]*pendingAuth)}
}

// add stores pa under id; false means the store is full of live entries.
func (p *pendingStore) add(id string, pa *pendingAuth, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= p.max {
		p.sweepLocked(now)
		if len(p.m) >= p.max {
			return false
		}
	}
	p.m[id] = pa
	return true
}

// matches compares the form's CSRF token and the browser cookie with the
// entry's, in constant time.
func (p *pendingAuth) matches(csrf, browser string) bool {
	c := subtle.ConstantTimeCompare([]byte(p.csrf), []byte(csrf))
	b := subtle.ConstantTimeCompare([]byte(p.browser), []byte(browser))
	return c&b == 1
}

// take removes and returns the entry under id if it is unexpired and both
// the CSRF token and the browser cookie match. A failed check leaves the
// entry in place, so an attacker's guess cannot burn the user's request.
func (p *pendingStore) take(id, csrf, browser string, now time.Time) (*pendingAuth, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pa, ok := p.m[id]
	if !ok || !now.Before(pa.expires) || !pa.matches(csrf, browser) {
		return nil, false
	}
	delete(p.m, id)
	return pa, true
}

func (p *pendingStore) sweep(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweepLocked(now)
}

func (p *pendingStore) sweepLocked(now time.Time) {
	for id, pa := range p.m {
		if !now.Before(pa.expires) {
			delete(p.m, id)
		}
	}
}
