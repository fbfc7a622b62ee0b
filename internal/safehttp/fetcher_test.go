package safehttp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// redirectDial sends every connection to the local test server and records
// the address that was asked for, so tests with public-looking addresses
// never leave the machine.
type redirectDial struct {
	target string
	mu     sync.Mutex
	asked  []string
}

func (d *redirectDial) dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.asked = append(d.asked, address)
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, network, d.target)
}

// TestBlockedAddresses covers requirements CL-23 and CIMD-05: every
// special-use class is refused after resolution and before any connect.
func TestBlockedAddresses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer []netip.Addr
	}{
		{"CL-23 RFC 1918 10/8", oauthtest.Addrs("10.0.0.5")},
		{"RFC 1918 172.16/12", oauthtest.Addrs("172.16.3.4")},
		{"RFC 1918 192.168/16", oauthtest.Addrs("192.168.1.1")},
		{"CL-23 cloud metadata 169.254.169.254", oauthtest.Addrs("169.254.169.254")},
		{"CIMD-05 loopback 127.0.0.1", oauthtest.Addrs("127.0.0.1")},
		{"loopback 127.1.2.3", oauthtest.Addrs("127.1.2.3")},
		{"loopback ::1", oauthtest.Addrs("::1")},
		{"unique local fd00::1", oauthtest.Addrs("fd00::1")},
		{"link-local fe80::1", oauthtest.Addrs("fe80::1")},
		{"IPv4-mapped private", oauthtest.Addrs("::ffff:10.0.0.5")},
		{"IPv4-mapped loopback", oauthtest.Addrs("::ffff:127.0.0.1")},
		{"IPv4-mapped metadata", oauthtest.Addrs("::ffff:169.254.169.254")},
		{"NAT64 of private", oauthtest.Addrs("64:ff9b::a00:5")},
		{"6to4 of metadata", oauthtest.Addrs("2002:a9fe:a9fe::1")},
		{"unspecified 0.0.0.0", oauthtest.Addrs("0.0.0.0")},
		{"unspecified ::", oauthtest.Addrs("::")},
		{"carrier NAT", oauthtest.Addrs("100.64.0.1")},
		{"multicast", oauthtest.Addrs("224.0.0.1")},
		{"IPv6 multicast", oauthtest.Addrs("ff02::1")},
		{"broadcast", oauthtest.Addrs("255.255.255.255")},
		{"documentation", oauthtest.Addrs("192.0.2.1")},
		{"one bad address among good ones", oauthtest.Addrs("93.184.216.34", "10.0.0.5")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := New(Options{Resolver: oauthtest.NewResolverSeq(tt.answer), Dial: oauthtest.ForbidDial(t)})
			_, err := f.Get(context.Background(), "https://attacker.example/doc.json", "")
			var be *BlockedAddressError
			if !errors.As(err, &be) || !errors.Is(err, ErrBlockedAddress) {
				t.Fatalf("err = %v, want *BlockedAddressError", err)
			}
		})
	}
}

// TestBlockedLiteralsNeverResolve: IP literals in the URL are checked
// without a resolver call and without a connect.
func TestBlockedLiteralsNeverResolve(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"https://169.254.169.254/latest/meta-data/",
		"https://10.0.0.5/x",
		"https://[fd00::1]/x",
		"https://[::ffff:a00:5]/x",
		"https://127.0.0.1/x",
		"https://localhost/x",
	} {
		t.Run(u, func(t *testing.T) {
			t.Parallel()
			r := oauthtest.NewResolverSeq(oauthtest.Addrs("93.184.216.34"))
			f := New(Options{Resolver: r, Dial: oauthtest.ForbidDial(t)})
			if _, err := f.Get(context.Background(), u, ""); !errors.Is(err, ErrBlockedAddress) {
				t.Fatalf("err = %v, want ErrBlockedAddress", err)
			}
			if r.Calls() != 0 {
				t.Fatal("resolver consulted for an IP literal or localhost")
			}
		})
	}
}

func TestSchemeRefusedBeforeResolution(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		url  string
		opts Options
		want error
	}{
		{"http://example.com/x", Options{}, ErrScheme},
		{"http://example.com/x", Options{InsecureAllowHTTPLoopback: true}, ErrScheme},
		{"http://127.0.0.1/x", Options{}, ErrScheme},
		// Plain http in insecure mode: loopback IP literals and "localhost"
		// only, not names that merely look like them.
		{"http://localhost./x", Options{InsecureAllowHTTPLoopback: true}, ErrScheme},
		{"http://localhost.example.com/x", Options{InsecureAllowHTTPLoopback: true}, ErrScheme},
		{"http://127.1/x", Options{InsecureAllowHTTPLoopback: true}, ErrScheme},
		{"http://[fe80::1%25lo]/x", Options{InsecureAllowHTTPLoopback: true}, ErrScheme},
		{"http://10.0.0.1/x", Options{InsecureAllowHTTPLoopback: true}, ErrScheme},
		{"javascript:alert(1)", Options{}, ErrInvalidURL},
		{"file:///etc/passwd", Options{}, ErrInvalidURL},
		{"ftp://example.com/x", Options{}, ErrScheme},
		{"https://user:pw@example.com/x", Options{}, ErrInvalidURL},
		{"/relative", Options{}, ErrInvalidURL},
	} {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			r := oauthtest.NewResolverSeq(oauthtest.Addrs("93.184.216.34"))
			tt.opts.Resolver = r
			tt.opts.Dial = oauthtest.ForbidDial(t)
			if _, err := New(tt.opts).Get(context.Background(), tt.url, ""); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if r.Calls() != 0 {
				t.Fatal("resolver consulted for a refused URL")
			}
		})
	}
}

// tlsTarget starts a TLS test server on 127.0.0.1 and returns options whose
// resolver claims example.com is a public address and whose dial function
// quietly connects to the test server instead.
func tlsTarget(t *testing.T, h http.Handler, answers ...[]netip.Addr) (Options, *redirectDial) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	d := &redirectDial{target: srv.Listener.Addr().String()}
	if len(answers) == 0 {
		answers = [][]netip.Addr{oauthtest.Addrs("93.184.216.34")}
	}
	return Options{
		Resolver:  oauthtest.NewResolverSeq(answers...),
		Dial:      d.dial,
		TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig,
	}, d
}

func TestGetPublicDocument(t *testing.T) {
	t.Parallel()
	opts, d := tlsTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "application/json" {
			t.Errorf("Accept = %q", r.Header.Get("Accept"))
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	resp, err := New(opts).Get(context.Background(), "https://example.com/doc.json", "")
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Body) != `{"ok":true}` || resp.Header.Get("Cache-Control") != "max-age=60" {
		t.Fatalf("resp = %+v", resp)
	}
	if len(d.asked) != 1 || d.asked[0] != "93.184.216.34:443" {
		t.Fatalf("dialled %q, want the checked address", d.asked)
	}
}

// TestDNSRebinding: the resolver answers a public address first and a
// private one afterwards; the connection must go to the address that was
// checked, and a later fetch that resolves privately must be refused.
func TestDNSRebinding(t *testing.T) {
	t.Parallel()
	opts, d := tlsTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "close")
		fmt.Fprint(w, `{}`)
	}), oauthtest.Addrs("93.184.216.34"), oauthtest.Addrs("10.0.0.5"))
	f := New(opts)
	if _, err := f.Get(context.Background(), "https://example.com/a", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(context.Background(), "https://example.com/b", ""); !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("second fetch after rebinding: err = %v, want ErrBlockedAddress", err)
	}
	for _, a := range d.asked {
		if a != "93.184.216.34:443" {
			t.Fatalf("dialled %q", a)
		}
	}
}

func TestResponseChecks(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", 2<<20)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		opts    func(*Options)
		want    error
	}{
		{name: "status 404", handler: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, want: ErrStatus},
		{name: "status 500", handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, want: ErrStatus},
		{name: "html", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>")
		}, want: ErrContentType},
		{name: "no content type", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			w.Write([]byte{0x1f, 0x8b, 0, 0})
		}, want: ErrContentType},
		{name: "jwk-set+json accepted", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/jwk-set+json")
			fmt.Fprint(w, `{"keys":[]}`)
		}},
		{name: "too large with length", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, big)
		}, want: ErrTooLarge},
		{name: "too large chunked", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			for i := 0; i < 3; i++ {
				fmt.Fprint(w, big[:1<<20])
				w.(http.Flusher).Flush()
			}
		}, want: ErrTooLarge},
		{name: "custom cap", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, strings.Repeat(" ", 5121))
		}, opts: func(o *Options) { o.MaxBytes = 5120 }, want: ErrTooLarge},
		{name: "CIMD-04 redirect refused", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://example.com/other", http.StatusFound)
		}, want: ErrRedirect},
		{name: "redirect to private address refused per hop", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://10.0.0.5/internal", http.StatusFound)
		}, opts: func(o *Options) { o.MaxRedirects = 3 }, want: ErrBlockedAddress},
		{name: "redirect to http refused per hop", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://example.com/x", http.StatusFound)
		}, opts: func(o *Options) { o.MaxRedirects = 3 }, want: ErrScheme},
		{name: "redirect loop bounded", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://example.com/loop", http.StatusFound)
		}, opts: func(o *Options) { o.MaxRedirects = 2 }, want: ErrRedirect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts, _ := tlsTarget(t, tt.handler)
			if tt.opts != nil {
				tt.opts(&opts)
			}
			_, err := New(opts).Get(context.Background(), "https://example.com/doc", "")
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	opts, _ := tlsTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer close(release)
	opts.Timeout = 100 * time.Millisecond
	if _, err := New(opts).Get(context.Background(), "https://example.com/slow", ""); err == nil {
		t.Fatal("a server that never answers did not produce an error")
	}
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	opts, _ := tlsTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(opts).Get(ctx, "https://example.com/x", ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestInsecureAllowLoopback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"loopback":true}`)
	}))
	defer srv.Close()
	f := New(Options{InsecureAllowHTTPLoopback: true, Resolver: oauthtest.NewResolverSeq(oauthtest.Addrs("10.0.0.5"))})
	resp, err := f.Get(context.Background(), srv.URL+"/x", "")
	if err != nil || string(resp.Body) != `{"loopback":true}` {
		t.Fatalf("loopback fetch: %v", err)
	}
	// The switch permits loopback only; a name resolving to a private
	// address is still refused, and never dialled.
	f = New(Options{InsecureAllowHTTPLoopback: true, Resolver: oauthtest.NewResolverSeq(oauthtest.Addrs("10.0.0.5")), Dial: oauthtest.ForbidDial(t)})
	if _, err := f.Get(context.Background(), "https://internal.example/x", ""); !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("err = %v, want ErrBlockedAddress", err)
	}
	// Plain http to loopback is refused without the switch.
	if _, err := New(Options{}).Get(context.Background(), srv.URL, ""); !errors.Is(err, ErrScheme) {
		t.Fatalf("err = %v, want ErrScheme", err)
	}
}

// TestCheckURLLoopbackHosts: in insecure mode plain http passes the URL
// check for every spelling of a loopback host, and for none without it.
func TestCheckURLLoopbackHosts(t *testing.T) {
	t.Parallel()
	insecure, strict := New(Options{InsecureAllowHTTPLoopback: true}), New(Options{})
	for _, u := range []string{"http://localhost/x", "http://LOCALHOST:8080/x", "http://127.0.0.1/x", "http://127.255.0.1/x",
		"http://[::1]:8080/x", "http://[::ffff:127.0.0.1]/x"} {
		if err := insecure.CheckURL(u); err != nil {
			t.Errorf("insecure CheckURL(%q) = %v", u, err)
		}
		if err := strict.CheckURL(u); !errors.Is(err, ErrScheme) {
			t.Errorf("strict CheckURL(%q) = %v, want ErrScheme", u, err)
		}
	}
}

func TestClientSharesGuards(t *testing.T) {
	t.Parallel()
	f := New(Options{Resolver: oauthtest.NewResolverSeq(oauthtest.Addrs("169.254.169.254")), Dial: oauthtest.ForbidDial(t)})
	resp, err := f.Client().Get("https://metadata.example/latest")
	if err == nil {
		resp.Body.Close()
		t.Fatal("Client() reached a blocked address")
	}
	if !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("err = %v, want ErrBlockedAddress", err)
	}
}

func TestCheckAddrAllowsPublic(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:93.184.216.34", "64:ff9b::5db8:d822"} {
		if r := checkAddr(netip.MustParseAddr(s), false); r != "" {
			t.Errorf("checkAddr(%s) = %q, want allowed", s, r)
		}
	}
}

// TestGetWithHeaderCredentialStaysAtOrigin: the Authorization header
// reaches the URL fetched; a redirect is refused and not followed, so the
// credential reaches no other origin; a fetcher that follows redirects
// refuses to send credentials at all.
func TestGetWithHeaderCredentialStaysAtOrigin(t *testing.T) {
	t.Parallel()
	var otherHits int
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		otherHits++
		mu.Unlock()
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"auth":%q}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	h := http.Header{"Authorization": {"Bearer tok"}}
	f := New(Options{InsecureAllowHTTPLoopback: true})
	resp, err := f.GetWithHeader(context.Background(), srv.URL+"/user", "", h)
	if err != nil || string(resp.Body) != `{"auth":"Bearer tok"}` {
		t.Fatalf("GetWithHeader: %v %v", err, resp)
	}
	if _, err := f.GetWithHeader(context.Background(), srv.URL+"/redirect", "", h); !errors.Is(err, ErrRedirect) {
		t.Fatalf("redirect: err = %v, want ErrRedirect", err)
	}
	following := New(Options{InsecureAllowHTTPLoopback: true, MaxRedirects: 2})
	if _, err := following.GetWithHeader(context.Background(), srv.URL+"/redirect", "", h); !errors.Is(err, ErrRedirect) {
		t.Fatalf("following fetcher: err = %v, want ErrRedirect", err)
	}
	// A header name not in canonical form is sent canonicalised, so it is
	// refused like the canonical one.
	for _, name := range []string{"authorization", "DPoP", "cookie"} {
		lower := http.Header{name: {"Bearer tok"}}
		if _, err := following.GetWithHeader(context.Background(), srv.URL+"/redirect", "", lower); !errors.Is(err, ErrRedirect) {
			t.Fatalf("following fetcher, header %q: err = %v, want ErrRedirect", name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if otherHits != 0 {
		t.Fatalf("the other origin was reached %d times", otherHits)
	}
}

// TestSharedTLSConfig: fetchers built from one Options (and so one
// *tls.Config) fetch at the same time. net/http sets up a transport's TLS
// configuration on its first request and clones it on every dial, so
// without a copy per fetcher the race detector reports the two transports
// writing and reading the shared value.
func TestSharedTLSConfig(t *testing.T) {
	t.Parallel()
	opts, _ := tlsTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	}))
	before := slices.Clone(opts.TLSConfig.NextProtos)
	var wg sync.WaitGroup
	for range 8 {
		f := New(opts)
		wg.Go(func() {
			if _, err := f.Get(context.Background(), "https://example.com/doc.json", ""); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if !slices.Equal(opts.TLSConfig.NextProtos, before) {
		t.Fatalf("the caller's TLS configuration was changed: NextProtos %q, was %q", opts.TLSConfig.NextProtos, before)
	}
}
