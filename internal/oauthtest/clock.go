package oauthtest

import (
	"sync"
	"time"
)

// Epoch is the fixed instant test clocks start at: 2026-08-01 12:00:00 UTC.
func Epoch() time.Time { return time.Date(2026, time.August, 1, 12, 0, 0, 0, time.UTC) }

// Clock is a manually advanced clock. Pass its Now method wherever a
// Now func() time.Time is accepted. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { locked(&c.mu, func() { c.now = c.now.Add(d) }) }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { setLocked(&c.mu, &c.now, t) }
