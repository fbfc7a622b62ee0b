// Package clientaddr finds the address of the client that sent an HTTP
// request, when the server sits behind reverse proxies or load balancers
// that append the address of their own peer to X-Forwarded-For or to
// Forwarded (RFC 7239).
//
// A forwarding header is believed only when the request's peer
// (http.Request.RemoteAddr) is a trusted proxy, and only as far as the
// chain of trusted proxies goes: the header is walked from the right, each
// trusted address skipped, and the first address that is not trusted is
// the client. Everything to its left was written by the client or by
// proxies nobody vouches for, and is never read. Whatever cannot be
// parsed, and the "unknown" or obfuscated identifiers of RFC 7239, stop
// the walk at the last trusted address: the result is then a proxy's
// address, never a value a client chose.
package clientaddr

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
)

// Header names the forwarding header that the trusted proxies write.
type Header uint8

// Forwarding headers.
const (
	// XForwardedFor is X-Forwarded-For: a comma-separated list of
	// addresses, each an IPv4 or IPv6 address, optionally with a port
	// ("192.0.2.1:4711", "[2001:db8::1]:4711").
	XForwardedFor Header = iota
	// Forwarded is RFC 7239's Forwarded: a comma-separated list of
	// elements, each read for its "for" parameter.
	Forwarded
)

// Bounds of the walk. Whatever the size of the header (the HTTP server
// bounds it), at most MaxHops elements of it, each of at most
// MaxElementBytes, are looked at, from the right: a longer element, or a
// client further than MaxHops elements from the right end (behind that
// many trusted addresses), ends the walk at the last trusted address.
const (
	MaxHops         = 16
	MaxElementBytes = 512
)

// Resolver finds client addresses. A nil or zero Resolver trusts no
// proxy: the client address is always the peer's. A Resolver is
// immutable and safe for concurrent use.
type Resolver struct {
	trusted []netip.Prefix
	header  Header
}

// New returns a resolver that believes header when the peer is within
// trusted. Each prefix must be valid and narrower than /0 (trusting every
// address would let any client name its own address); an IPv4-mapped IPv6
// prefix is taken as the IPv4 prefix it maps. Its errors name the refused
// prefix, not the package, so callers can show them as they are.
func New(trusted []netip.Prefix, header Header) (*Resolver, error) {
	if header != XForwardedFor && header != Forwarded {
		return nil, fmt.Errorf("unknown forwarding header %d", header)
	}
	r := &Resolver{header: header, trusted: make([]netip.Prefix, 0, len(trusted))}
	for _, p := range trusted {
		if !p.IsValid() {
			return nil, errors.New("invalid prefix")
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return nil, fmt.Errorf("%s reaches beyond the IPv4-mapped addresses", p)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if p.Bits() == 0 {
			return nil, fmt.Errorf("%s trusts every address", p)
		}
		r.trusted = append(r.trusted, p.Masked())
	}
	return r, nil
}

// Addr returns the client address of req (see [Resolver.Resolve]).
func (r *Resolver) Addr(req *http.Request) netip.Addr {
	return r.Resolve(req.RemoteAddr, req.Header)
}

// Resolve returns the client address of a request whose peer is
// remoteAddr (as in http.Request.RemoteAddr) and whose headers are h:
//
//   - the peer, when it is not a trusted proxy (its headers are not read);
//   - otherwise the rightmost address of the header that is not trusted,
//     the header's lines taken in order as one list;
//   - otherwise, when the header is absent or holds only trusted
//     addresses, when an element is malformed, too long, "unknown" or
//     obfuscated, or after MaxHops elements, the last trusted address
//     reached (the peer, if none in the header).
//
// IPv4-mapped IPv6 addresses are returned as IPv4, and without zone. A
// remoteAddr that is not an address (with or without port) gives the
// zero netip.Addr.
func (r *Resolver) Resolve(remoteAddr string, h http.Header) netip.Addr {
	last := Peer(remoteAddr)
	if !last.IsValid() || !r.trusts(last) {
		return last
	}
	lines := h[r.headerKey()]
	budget := MaxHops
	for i := len(lines) - 1; i >= 0; i-- {
		s := lines[i]
		for more := true; more; {
			if budget == 0 {
				return last
			}
			budget--
			var elem string
			var ok bool
			elem, s, more, ok = lastElement(s, r.header == Forwarded)
			if !ok {
				return last
			}
			if elem = trimOWS(elem); elem == "" {
				continue // an empty list element (RFC 9110 §5.6.1)
			}
			a, ok := r.parseElement(elem)
			if !ok {
				return last
			}
			if !r.trusts(a) {
				return a
			}
			last = a
		}
	}
	return last
}

// Peer parses remoteAddr, an address with or without port, as an address
// without zone, IPv4-mapped addresses unmapped; anything else gives the
// zero netip.Addr.
func Peer(remoteAddr string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(remoteAddr); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

func (r *Resolver) trusts(a netip.Addr) bool {
	if r == nil {
		return false
	}
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (r *Resolver) headerKey() string {
	if r.header == Forwarded {
		return "Forwarded"
	}
	return "X-Forwarded-For"
}

func (r *Resolver) parseElement(elem string) (netip.Addr, bool) {
	if r.header == Forwarded {
		node, ok := forwardedFor(elem)
		if !ok {
			return netip.Addr{}, false
		}
		return parseNode(node, true)
	}
	return parseNode(elem, false)
}
