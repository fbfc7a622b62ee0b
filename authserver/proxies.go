package authserver

import (
	"net/netip"

	"github.com/mcpauth/mcpauth/internal/clientaddr"
)

// TrustedProxies are the load balancers and reverse proxies in front of
// the server. Behind them every connection comes from a proxy, so the
// address of the client, by which the server's rate limits count
// ([RateLimit]), is the one the proxies append to their forwarding
// header. The zero value trusts no proxy: the client address is the
// connection's peer and forwarding headers are never read.
//
// The header is believed only when the connection's peer is within
// Prefixes, and only as far as the chain of trusted proxies goes: it is
// read from the right, trusted addresses are skipped, and the first
// address that is not trusted is the client's. What a client writes
// into the header itself stays to the left of what the proxies append,
// and is never read; a request sent to the server directly, around the
// proxies, is counted by its own address whatever it claims.
//
// The walk fails closed: an element that cannot be parsed, an "unknown"
// or obfuscated RFC 7239 identifier, an element over 512 bytes or a
// client further than 16 elements from the header's right end ends it at
// the last trusted address (a proxy's), never at one a client chose. At
// most 16 elements of 512 bytes are read, from the right end, whatever
// the header's size. A request whose peer is not an IP address (a Unix
// socket) reads no header, and all such requests share one address.
//
// Trust only proxies that append to (or set) the header named by Header,
// and that cannot be reached around. A client whose own address is within
// Prefixes is trusted to forward, and may name any address.
type TrustedProxies struct {
	// Prefixes are the proxies' addresses: 10.0.0.0/8, 2001:db8::/32, or
	// one address as a /32 or /128 prefix. IPv4-mapped IPv6 prefixes are
	// taken as the IPv4 prefixes they map. A /0 prefix (every address) is
	// refused. Empty means no proxy is trusted.
	Prefixes []netip.Prefix
	// Header is the forwarding header the proxies write. The zero value is
	// X-Forwarded-For; the other header is ignored, since a proxy that
	// does not write it passes on whatever a client sent in it.
	Header ProxyHeader
}

// ProxyHeader names a forwarding header.
type ProxyHeader int

// Forwarding headers.
const (
	// ProxyHeaderXForwardedFor is X-Forwarded-For: addresses, each
	// optionally with a port ("192.0.2.1:4711", "[2001:db8::1]:4711").
	ProxyHeaderXForwardedFor ProxyHeader = iota
	// ProxyHeaderForwarded is the Forwarded header of RFC 7239, read for
	// the "for" parameter of each element.
	ProxyHeaderForwarded
)

// String returns "x-forwarded-for" or "forwarded".
func (h ProxyHeader) String() string {
	if h == ProxyHeaderForwarded {
		return "forwarded"
	}
	return "x-forwarded-for"
}

// ParseProxyHeader parses "x-forwarded-for" or "forwarded".
func ParseProxyHeader(s string) (ProxyHeader, error) {
	switch s {
	case "x-forwarded-for":
		return ProxyHeaderXForwardedFor, nil
	case "forwarded":
		return ProxyHeaderForwarded, nil
	}
	return 0, configErr("TrustedProxies.Header", "must be x-forwarded-for or forwarded")
}

// resolver checks p and returns its resolver.
func (p TrustedProxies) resolver() (*clientaddr.Resolver, error) {
	h := clientaddr.XForwardedFor
	switch p.Header {
	case ProxyHeaderXForwardedFor:
	case ProxyHeaderForwarded:
		h = clientaddr.Forwarded
	default:
		return nil, configErr("TrustedProxies.Header", "must be ProxyHeaderXForwardedFor or ProxyHeaderForwarded")
	}
	r, err := clientaddr.New(p.Prefixes, h)
	if err != nil {
		return nil, configErr("TrustedProxies.Prefixes", err.Error())
	}
	return r, nil
}
