package safehttp

import (
	"net/netip"
)

// specialPrefixes are the ranges never contacted, whatever the options. The
// list follows the IANA IPv4 and IPv6 Special-Purpose Address Registries
// (RFC 6890 and updates) plus multicast and the private ranges.
var specialPrefixes = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (RFC 6598)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use IPv4/IPv6 translation"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
	{netip.MustParsePrefix("5f00::/16"), "segment routing"},
	{netip.MustParsePrefix("fc00::/7"), "unique local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// checkAddr returns the reason addr may not be contacted, or "" if it may.
// Loopback addresses are allowed only when allowLoopback is set. Addresses
// that embed an IPv4 address (IPv4-mapped, NAT64, 6to4) are judged by the
// embedded address, so ::ffff:10.0.0.5 is as private as 10.0.0.5.
func checkAddr(addr netip.Addr, allowLoopback bool) string {
	if !addr.IsValid() {
		return "invalid address"
	}
	if addr.Zone() != "" {
		return "scoped address"
	}
	addr = addr.Unmap()
	if addr.Is6() {
		if nat64Prefix.Contains(addr) {
			b := addr.As16()
			return checkEmbedded(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "NAT64")
		}
		if sixToFour.Contains(addr) {
			b := addr.As16()
			return checkEmbedded(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4")
		}
	}
	if addr.IsLoopback() {
		if allowLoopback {
			return ""
		}
		return "loopback"
	}
	for _, sp := range specialPrefixes {
		if sp.prefix.Contains(addr) {
			return sp.reason
		}
	}
	return ""
}

// checkEmbedded judges the IPv4 address inside a translation prefix.
// Loopback reached through such a prefix is never the "this machine" that
// the insecure switch is about, so it is refused regardless.
func checkEmbedded(v4 netip.Addr, kind string) string {
	if r := checkAddr(v4, false); r != "" {
		return kind + " form of " + r
	}
	return ""
}
