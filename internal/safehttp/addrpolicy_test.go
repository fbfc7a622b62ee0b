package safehttp

import (
	"net"
	"net/netip"
	"testing"
)

// FuzzCheckAddr cross-checks the address policy against the standard
// library's classification: nothing the standard library calls private,
// loopback, link-local, multicast or unspecified is ever allowed, in any
// IPv4-mapped or translated form.
func FuzzCheckAddr(f *testing.F) {
	f.Add([]byte{10, 0, 0, 5})
	f.Add([]byte{169, 254, 169, 254})
	f.Add(netip.MustParseAddr("::ffff:127.0.0.1").AsSlice())
	f.Add(netip.MustParseAddr("64:ff9b::a00:5").AsSlice())
	f.Add(netip.MustParseAddr("2002:a00:5::").AsSlice())
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		ip := net.IP(a.AsSlice())
		dangerous := ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
			ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast()
		if dangerous && checkAddr(a, false) == "" {
			t.Fatalf("checkAddr allowed %s", a)
		}
		if !a.Unmap().IsLoopback() && checkAddr(a, true) == "" && dangerous {
			t.Fatalf("loopback switch allowed non-loopback %s", a)
		}
	})
}
