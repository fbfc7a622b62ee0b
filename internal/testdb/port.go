package testdb

import (
	"net"
	"strconv"
	"testing"
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago. A
// server that then fails to bind it is started again with another port.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testdb: no free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
