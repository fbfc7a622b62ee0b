package oauthtest

import (
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"
)

// SourceDialer returns a dialer whose connections leave from the loopback
// address src (such as "127.0.0.7"), so that a server on 127.0.0.1 sees
// requests from distinct client addresses. Linux routes all of
// 127.0.0.0/8 to the loopback interface; where src cannot be bound (macOS
// configures only 127.0.0.1 by default) the test is skipped, except on
// Linux under CI (CI set), where that would hide a security test. An
// address outside 127.0.0.0/8 fails the test.
func SourceDialer(t testing.TB, src string) *net.Dialer {
	t.Helper()
	ip, err := netip.ParseAddr(src)
	if err != nil || !ip.Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(ip) {
		t.Fatalf("oauthtest: source address %q is not in 127.0.0.0/8", src)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(src, "0"))
	if err != nil {
		if runtime.GOOS == "linux" && os.Getenv("CI") != "" {
			t.Fatalf("loopback address %s cannot be bound: %v; CI must not skip this test", src, err)
		}
		t.Skipf("loopback address %s cannot be bound on this system: %v", src, err)
	}
	_ = l.Close()
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip.AsSlice()}}
}
