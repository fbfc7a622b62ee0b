package oauthtest

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
)

// PublicAddr is the public address fake resolvers hand out for names that
// must look public. No packet is ever sent to it: tests pair it with
// [ForbidDial] or with a dial function that connects to 127.0.0.1.
var PublicAddr = netip.MustParseAddr("93.184.216.34")

// Resolver answers host-name lookups without DNS and counts them. Lookup i
// gets answer i, the last answer repeating. It is safe for concurrent use.
type Resolver struct {
	answers [][]netip.Addr
	calls   atomic.Int32
}

// NewResolver returns a resolver that answers every lookup with addrs.
func NewResolver(addrs ...netip.Addr) *Resolver {
	return &Resolver{answers: [][]netip.Addr{addrs}}
}

// NewResolverSeq returns a resolver that answers lookup i with answers[i],
// repeating the last one: a DNS rebinding attacker's resolver.
func NewResolverSeq(answers ...[]netip.Addr) *Resolver {
	return &Resolver{answers: answers}
}

// LookupNetIP implements the resolver interface of the fetchers.
func (r *Resolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	i := int(r.calls.Add(1)) - 1
	return r.answers[min(i, len(r.answers)-1)], nil
}

// Calls returns the number of lookups so far.
func (r *Resolver) Calls() int { return int(r.calls.Load()) }

// Addrs parses addresses, panicking on a malformed one.
func Addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// ForbidDial returns a dial function that fails the test if it is called:
// the address must be refused before any connection is attempted.
func ForbidDial(t testing.TB) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(_ context.Context, network, address string) (net.Conn, error) {
		t.Errorf("dial %s %s attempted; it must be refused before any connect", network, address)
		return nil, errors.New("dial forbidden in this test")
	}
}
