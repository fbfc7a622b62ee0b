package client

import "net/netip"

// isLoopbackIP reports whether host is a loopback IP literal (127.0.0.0/8,
// ::1), without the brackets of an IPv6 host.
func isLoopbackIP(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.Zone() == "" && a.Unmap().IsLoopback()
}
