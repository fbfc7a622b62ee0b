package attack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// vnet is a pretend internet on 127.0.0.1. Host names resolve (through
// LookupNetIP) to public-looking addresses that are never contacted; Dial
// connects such an address to the loopback listener serving that host.
// Hosts registered with Internal resolve to private addresses and have no
// listener: dialling one fails the test. All listeners use httptest's
// certificate, valid for example.com and *.example.com, which TLS trusts.
//
// vnet is safe for concurrent use.
type vnet struct {
	t  testing.TB
	mu sync.Mutex
	// names maps a host name to the addresses it resolves to.
	names map[string][]netip.Addr
	// listeners maps a public address to the loopback listener behind it.
	listeners map[netip.Addr]string
	// hits counts requests per host name.
	hits map[string]*atomic.Int64
	// dials lists every address a dial was attempted to.
	dials []string
	pool  *x509.CertPool
	next  int
	// servers maps a host name to its listener, for Stop.
	servers map[string]*httptest.Server
}

func newVNet(t testing.TB) *vnet {
	return &vnet{t: t, names: map[string][]netip.Addr{}, listeners: map[netip.Addr]string{},
		hits: map[string]*atomic.Int64{}, pool: x509.NewCertPool(), servers: map[string]*httptest.Server{}}
}

// Serve starts an https listener on 127.0.0.1 for host (a name under
// example.com) and returns its origin, "https://host".
func (n *vnet) Serve(host string, h http.Handler) string {
	n.t.Helper()
	counter := &atomic.Int64{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counter.Add(1)
		h.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut short by refusals are expected
	srv.StartTLS()
	n.t.Cleanup(srv.Close)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next++
	addr := netip.AddrFrom4([4]byte{93, 184, 215, byte(n.next)})
	n.names[host] = []netip.Addr{addr}
	n.listeners[addr] = srv.Listener.Addr().String()
	n.hits[host] = counter
	n.servers[host] = srv
	n.pool.AddCert(srv.Certificate())
	return "https://" + host
}

// Stop closes host's listener, as if its process were killed; Serve may
// start a new one under the same name.
func (n *vnet) Stop(host string) {
	n.mu.Lock()
	srv := n.servers[host]
	n.mu.Unlock()
	if srv != nil {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// Internal makes host resolve to addrs (private, link-local, loopback…)
// with nothing listening: any dial there fails the test.
func (n *vnet) Internal(host string, addrs ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range addrs {
		n.names[host] = append(n.names[host], netip.MustParseAddr(a))
	}
	n.hits[host] = &atomic.Int64{}
}

// Hits reports how many requests host's listener received.
func (n *vnet) Hits(host string) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.hits[host]; ok {
		return c.Load()
	}
	return 0
}

// LookupNetIP implements the Resolver seams of client, resource,
// clientmeta and safehttp.
func (n *vnet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.names[strings.ToLower(host)]; ok {
		return append([]netip.Addr(nil), a...), nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Dial connects a checked public address to its loopback listener. Any
// other address fails the test: the code under test let a forbidden
// address through its guard.
func (n *vnet) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	return n.dialWith(ctx, &net.Dialer{}, network, address)
}

// dialWith is Dial through d (which may bind another loopback source
// address).
func (n *vnet) dialWith(ctx context.Context, d *net.Dialer, network, address string) (net.Conn, error) {
	n.mu.Lock()
	n.dials = append(n.dials, address)
	host, port, err := net.SplitHostPort(address)
	var target string
	if err == nil && port == "443" {
		if ip, perr := netip.ParseAddr(host); perr == nil {
			target = n.listeners[ip.Unmap()]
		}
	}
	n.mu.Unlock()
	if target == "" {
		n.t.Errorf("dial %s %s: the address guard let a forbidden address through", network, address)
		return nil, errors.New("vnet: dial refused")
	}
	return d.DialContext(ctx, "tcp", target)
}

// Dials returns the addresses dialled so far.
func (n *vnet) Dials() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.dials...)
}

// TLS returns a client configuration trusting every vnet listener.
func (n *vnet) TLS() *tls.Config {
	n.mu.Lock()
	defer n.mu.Unlock()
	return &tls.Config{RootCAs: n.pool, MinVersion: tls.VersionTLS12}
}

// Transport is an http.Transport that reaches vnet hosts by name (the
// attacker's or the MCP host's own HTTP stack). It does not follow the
// address guard: it is the hostile party's client, not code under test.
func (n *vnet) Transport() *http.Transport { return n.TransportFrom(&net.Dialer{}) }

// TransportFrom is Transport with connections made by d, such as a dialer
// from oauthtest.SourceDialer, so that servers see another client address.
func (n *vnet) TransportFrom(d *net.Dialer) *http.Transport {
	return &http.Transport{
		TLSClientConfig: n.TLS(),
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if port != "443" {
				return nil, fmt.Errorf("vnet: nothing listens on %s", addr) // refused, as on the internet
			}
			ips, err := n.LookupNetIP(ctx, "ip", host)
			if err != nil || len(ips) == 0 {
				return nil, fmt.Errorf("vnet: %s does not resolve", host)
			}
			return n.dialWith(ctx, d, network, net.JoinHostPort(ips[0].String(), port))
		},
		ForceAttemptHTTP2: false,
	}
}

// Client is an *http.Client over Transport that does not follow redirects.
func (n *vnet) Client() *http.Client { return n.ClientFrom(&net.Dialer{}) }

// ClientFrom is Client over TransportFrom(d).
func (n *vnet) ClientFrom(d *net.Dialer) *http.Client {
	return &http.Client{Transport: n.TransportFrom(d), Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
