package clientmeta

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/internal/safehttp"
)

const testID = "https://client.example.com/oauth/client.json"

func TestResolveValid(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// CIMD-13: the fetch asks for JSON.
		if got := r.Header.Get("Accept"); got != "application/json" {
			t.Errorf("Accept = %q", got)
		}
		if r.URL.Path != "/oauth/client.json" || r.Host != "client.example.com" {
			t.Errorf("fetched %s %s", r.Host, r.URL.Path)
		}
		serveDoc(docJSON(testID))(w, r)
	}))
	r, err := NewResolver(tg.config(newClock()))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := r.Resolve(context.Background(), testID)
	if err != nil {
		t.Fatal(err)
	}
	if doc.ClientName != "Example MCP Client" || doc.RedirectURIs[0] != "http://127.0.0.1:3000/callback" {
		t.Fatalf("doc = %+v", doc)
	}
}

// TestResolveFetchRules covers requirement CIMD-04: only a 200 JSON object
// within 5 KB counts, and redirects are never followed.
func TestResolveFetchRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantErr []error
	}{
		{"CIMD-04 302 refused", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://client.example.com/other.json", http.StatusFound)
		}, []error{ErrFetch, safehttp.ErrRedirect}},
		{"CIMD-04 301 refused", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://client.example.com/other.json", http.StatusMovedPermanently)
		}, []error{ErrFetch, safehttp.ErrRedirect}},
		{"CIMD-04 6 KB refused", serveDoc(strings.Replace(docJSON(testID), `{`, `{"pad":"`+strings.Repeat("a", 6<<10)+`",`, 1)),
			[]error{ErrFetch, safehttp.ErrTooLarge}},
		{"CIMD-04 text/html refused", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, docJSON(testID))
		}, []error{ErrFetch, safehttp.ErrContentType}},
		{"CIMD-04 only 200: 203 refused", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNonAuthoritativeInfo)
			fmt.Fprint(w, docJSON(testID))
		}, []error{ErrFetch, safehttp.ErrStatus}},
		{"CIMD-07 404", http.NotFound, []error{ErrFetch, safehttp.ErrStatus}},
		{"CIMD-04 JSON array", serveDoc(`[]`), []error{ErrInvalidDocument}},
		{"CIMD-02 mismatched client_id", serveDoc(docJSON(testID + "/")), []error{ErrInvalidDocument, ErrClientIDMismatch}},
		{"CIMD-03 secret in document", serveDoc(strings.Replace(docJSON(testID), `{`, `{"client_secret":"x",`, 1)), []error{ErrSharedSecret}},
		{"+json content type accepted", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/cimd+json")
			fmt.Fprint(w, docJSON(testID))
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, tt.handler)
			r, err := NewResolver(tg.config(newClock()))
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Resolve(context.Background(), testID)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want errors.Is %v", err, want)
				}
			}
		})
	}
}

// TestResolveTimeout: a server that never answers is cut off by the
// configured timeout (CIMD-04), not left hanging.
func TestResolveTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	tg := newTarget(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release) })
	cfg := tg.config(newClock())
	cfg.Timeout = 200 * time.Millisecond
	r, err := NewResolver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resolve(context.Background(), testID); !errors.Is(err, ErrFetch) {
		t.Fatalf("err = %v, want ErrFetch", err)
	}
}

// TestResolveSSRF covers requirement CIMD-05: a client_id whose host
// resolves to loopback, link-local or private space is refused with no TCP
// connect (the dial function fails the test if called).
func TestResolveSSRF(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		addr string
	}{
		{"CIMD-05 name resolving to 127.0.0.1", "https://client.example/c.json", "127.0.0.1"},
		{"CIMD-05 name resolving to 169.254.169.254", "https://client.example/c.json", "169.254.169.254"},
		{"CIMD-05 name resolving to 10.0.0.5", "https://client.example/c.json", "10.0.0.5"},
		{"CIMD-05 name resolving to fd00::1", "https://client.example/c.json", "fd00::1"},
		{"CIMD-05 IPv4-mapped metadata address", "https://client.example/c.json", "::ffff:169.254.169.254"},
		{"CIMD-05 literal metadata address", "https://169.254.169.254/latest/meta-data.json", "93.184.216.34"},
		{"CIMD-05 literal loopback", "https://127.0.0.1/c.json", "93.184.216.34"},
		{"CIMD-05 localhost", "https://localhost/c.json", "93.184.216.34"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewResolver(ResolverConfig{netHook: nethook.With(nethook.Net{Resolver: oauthtest.NewResolver(netip.MustParseAddr(tt.addr)), Dial: oauthtest.ForbidDial(t)})})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Resolve(context.Background(), tt.id)
			if !errors.Is(err, ErrFetch) || !errors.Is(err, safehttp.ErrBlockedAddress) {
				t.Fatalf("err = %v, want ErrFetch and ErrBlockedAddress", err)
			}
		})
	}
}

// TestResolveTrustPolicy covers requirement CIMD-11: the allowlist runs
// before the cache, the resolver and any dial.
func TestResolveTrustPolicy(t *testing.T) {
	t.Parallel()
	res := oauthtest.NewResolver(oauthtest.PublicAddr)
	r, err := NewResolver(ResolverConfig{
		TrustPolicy: AllowHosts("good.example", "*.trusted.example"),
		netHook:     nethook.With(nethook.Net{Resolver: res, Dial: oauthtest.ForbidDial(t)}),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{
		"https://evil.example/c.json",
		"https://trusted.example/c.json",
		"https://good.example.evil.example/c.json",
	} {
		if _, err := r.Resolve(context.Background(), id); !errors.Is(err, ErrUntrusted) {
			t.Fatalf("CIMD-11 Resolve(%s) = %v, want ErrUntrusted", id, err)
		}
	}
	if res.Calls() != 0 {
		t.Fatalf("CIMD-11: the host was resolved %d times before the policy refused it", res.Calls())
	}
	// An allowed host proceeds to the fetch.
	tg := newTarget(t, serveDoc(docJSON("https://app.example.com/c.json")))
	cfg := tg.config(newClock())
	cfg.TrustPolicy = AllowHosts("*.example.com")
	r2, _ := NewResolver(cfg)
	if _, err := r2.Resolve(context.Background(), "https://app.example.com/c.json"); err != nil {
		t.Fatalf("allowed host: %v", err)
	}
}

func TestResolveInvalidClientIDNoFetch(t *testing.T) {
	t.Parallel()
	res := oauthtest.NewResolver(oauthtest.PublicAddr)
	r, _ := NewResolver(ResolverConfig{netHook: nethook.With(nethook.Net{Resolver: res, Dial: oauthtest.ForbidDial(t)})})
	for _, id := range []string{"http://c/x.json", "https://c", "https://c/a/../x", "https://c/x#f", "https://u:p@c/x"} {
		if _, err := r.Resolve(context.Background(), id); !errors.Is(err, ErrInvalidClientID) {
			t.Fatalf("CIMD-01 Resolve(%q) = %v, want ErrInvalidClientID", id, err)
		}
	}
	if res.Calls() != 0 {
		t.Fatal("an invalid client_id was resolved")
	}
}

// heldTarget serves testID's document once release is closed; started is
// closed when the first request arrives.
func heldTarget(t *testing.T) (tg *target, started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	tg = newTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(started) })
		<-release
		serveDoc(docJSON(testID), "Cache-Control", "max-age=60")(w, r)
	}))
	return tg, started, release
}

// TestResolveSharedFetch: simultaneous misses share one fetch.
func TestResolveSharedFetch(t *testing.T) {
	t.Parallel()
	tg, started, release := heldTarget(t)
	r, _ := NewResolver(tg.config(newClock()))
	var wg sync.WaitGroup
	errs := make(chan error, 9)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := r.Resolve(context.Background(), testID)
		errs <- err
	}()
	select {
	case <-started:
	case err := <-errs:
		t.Fatalf("first Resolve returned before the fetch started: %v", err)
	}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Resolve(context.Background(), testID)
			errs <- err
		}()
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if tg.hits.Load() != 1 {
		t.Fatalf("fetches = %d, want 1", tg.hits.Load())
	}
}

// TestResolveSharedFetchOutlivesCaller: the shared fetch belongs to no one
// caller, so the first caller giving up neither cancels it nor fails the
// callers after it.
func TestResolveSharedFetchOutlivesCaller(t *testing.T) {
	t.Parallel()
	tg, started, release := heldTarget(t)
	r, _ := NewResolver(tg.config(newClock()))
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := r.Resolve(ctx, testID)
		first <- err
	}()
	<-started
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: err = %v, want context.Canceled", err)
	}
	close(release)
	if _, err := r.Resolve(context.Background(), testID); err != nil {
		t.Fatalf("a caller after the first gave up: %v", err)
	}
	if tg.hits.Load() != 1 {
		t.Fatalf("fetches = %d, want 1 (the shared fetch went on after its first caller left)", tg.hits.Load())
	}
}

// TestLoopbackMapping: off by default; when configured, a matching https
// client_id is fetched from the loopback origin and must still name itself.
func TestLoopbackMapping(t *testing.T) {
	t.Parallel()
	const id = "https://dev-client.example/app/client.json"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/app/client.json" {
			http.NotFound(w, r)
			return
		}
		serveDoc(docJSON(id))(w, r)
	}))
	t.Cleanup(srv.Close)

	strict, _ := NewResolver(ResolverConfig{netHook: nethook.With(nethook.Net{Resolver: oauthtest.NewResolver(netip.MustParseAddr("127.0.0.1")), Dial: oauthtest.ForbidDial(t)})})
	if _, err := strict.Resolve(context.Background(), id); !errors.Is(err, safehttp.ErrBlockedAddress) {
		t.Fatalf("default resolver: err = %v, want ErrBlockedAddress", err)
	}

	mapped, err := NewResolver(ResolverConfig{
		InsecureLoopbackMappings: []LoopbackMapping{{ClientIDPrefix: "https://dev-client.example/", FetchPrefix: srv.URL + "/"}},
		netHook: nethook.With(nethook.Net{Resolver: oauthtest.NewResolver(oauthtest.PublicAddr), Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			if address != srv.Listener.Addr().String() {
				t.Errorf("dialled %s", address)
				return nil, errors.New("unexpected dial")
			}
			var d net.Dialer
			return d.DialContext(ctx, network, address)
		}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := mapped.Resolve(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if doc.ClientID != id {
		t.Fatalf("client_id = %q", doc.ClientID)
	}
}

func TestNewResolverConfig(t *testing.T) {
	t.Parallel()
	bad := []ResolverConfig{
		{Timeout: -1},
		{InsecureLoopbackMappings: []LoopbackMapping{{ClientIDPrefix: "http://x/", FetchPrefix: "http://127.0.0.1/"}}},
		{InsecureLoopbackMappings: []LoopbackMapping{{ClientIDPrefix: "https://x/", FetchPrefix: "http://10.0.0.1/"}}},
		{InsecureLoopbackMappings: []LoopbackMapping{{ClientIDPrefix: "https://x", FetchPrefix: "http://127.0.0.1/"}}},
	}
	for i, cfg := range bad {
		if _, err := NewResolver(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("config %d: err = %v, want ErrConfig", i, err)
		}
	}
}

func TestAllowHosts(t *testing.T) {
	t.Parallel()
	p := AllowHosts("App.Example", "*.corp.example")
	tests := []struct {
		host string
		ok   bool
	}{
		{"app.example", true}, {"APP.example:8443", true}, {"a.corp.example", true},
		{"corp.example", false}, {"evilcorp.example", false}, {"app.example.evil", false},
	}
	for _, tt := range tests {
		u := &url.URL{Scheme: "https", Host: tt.host, Path: "/c.json"}
		if err := p.AllowClientID(context.Background(), u); (err == nil) != tt.ok {
			t.Errorf("AllowHosts(%s) = %v, want ok=%v", tt.host, err, tt.ok)
		}
	}
	// Hosts compare by ASCII case only: Unicode lower-cases the Kelvin
	// sign (U+212A) to "k".
	if AllowHosts("kit.example").AllowClientID(context.Background(), &url.URL{Scheme: "https", Host: "\u212Ait.example", Path: "/c.json"}) == nil {
		t.Error("AllowHosts(kit.example) admitted \u212Ait.example")
	}
	if AllowHosts().AllowClientID(context.Background(), &url.URL{Host: "x"}) == nil {
		t.Error("an empty allowlist admitted a host")
	}
}
