package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// browser plays the system browser for Loopback tests: it visits the
// authorization URL, then the redirect it gets, as a browser would.
type browser struct {
	t        *testing.T
	redirect *url.URL
	page     string
	status   int
	stray    int // status of a request with a wrong state, sent first
	done     chan struct{}
}

func (b *browser) open(ctx context.Context, authURL string) error {
	nofollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := nofollow.Get(authURL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		return err
	}
	b.redirect = loc
	go func() {
		defer close(b.done)
		stray := *loc
		stray.RawQuery = "state=forged&code=evil"
		if r, err := http.Get(stray.String()); err == nil {
			b.stray = r.StatusCode
			r.Body.Close()
		}
		r, err := http.Get(loc.String())
		if err != nil {
			b.t.Error(err)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		b.page, b.status = string(body), r.StatusCode
	}()
	return nil
}

// TestCL21Loopback: the listener is on 127.0.0.1 only, on an ephemeral
// port, accepts one response with the right state, shows a page without
// any credential, and is closed afterwards.
func TestCL21Loopback(t *testing.T) {
	t.Parallel()
	b := &browser{t: t, done: make(chan struct{})}
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) { c.Authorizer = &Loopback{Open: b.open} })
	if err := e.c.Login(context.Background(), e.rs.MCPURL()); err != nil {
		t.Fatal(err)
	}
	<-b.done
	q := e.as.Authorizations()[0]
	ru, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || ru.Hostname() != "127.0.0.1" || ru.Port() == "" || ru.Path != DefaultLoopbackPath {
		t.Fatalf("CL-21: redirect_uri %q is not http://127.0.0.1:<port>/callback", q.Get("redirect_uri"))
	}
	if b.stray != http.StatusNotFound {
		t.Errorf("a response with a forged state got %d; it must be ignored", b.stray)
	}
	if b.status != http.StatusOK || !strings.Contains(b.page, "Authorization complete") {
		t.Errorf("success page: %d %q", b.status, b.page)
	}
	code := b.redirect.Query().Get("code")
	for _, secret := range append(e.as.Secrets(), code, q.Get("state")) {
		if strings.Contains(b.page, secret) {
			t.Error("the success page shows a credential")
		}
	}
	// Closed after the callback: nothing listens on the port any more.
	if conn, err := net.DialTimeout("tcp", ru.Host, time.Second); err == nil {
		conn.Close()
		t.Error("CL-21: the listener is still open after the flow")
	}
}

// TestCL21LoopbackOnlyLoopbackAddress: while waiting, the listener accepts
// connections to 127.0.0.1 but not to another address of this machine.
func TestCL21LoopbackOnlyLoopbackAddress(t *testing.T) {
	t.Parallel()
	probed := make(chan error, 1)
	l := &Loopback{Timeout: 200 * time.Millisecond, Open: func(_ context.Context, authURL string) error {
		u, _ := url.Parse(authURL)
		ru, _ := url.Parse(u.Query().Get("redirect_uri"))
		go func() {
			ok, err := net.DialTimeout("tcp", ru.Host, time.Second)
			if err != nil {
				probed <- err
				return
			}
			ok.Close()
			// 127.0.0.2 is loopback too, but not the bound address: a
			// listener on all interfaces would accept it.
			other, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.2", ru.Port()), time.Second)
			if err == nil {
				other.Close()
				probed <- errors.New("listener accepted a connection to 127.0.0.2")
				return
			}
			probed <- nil
		}()
		return nil
	}}
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) { c.Authorizer = l })
	err := e.c.Login(context.Background(), e.rs.MCPURL())
	if !errors.Is(err, errTimeout) || !errors.Is(err, errAuthorizer) || !errors.Is(err, ErrAuthorization) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want errTimeout, in class ErrAuthorization, matching context.DeadlineExceeded", err)
	}
	if perr := <-probed; perr != nil {
		t.Errorf("CL-21: %v", perr)
	}
	if n := e.c.pending.Len(); n != 0 {
		t.Errorf("%d state records left after a timeout", n)
	}
}

func TestLoopbackCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loopback{Open: func(context.Context, string) error { cancel(); return nil }}
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) { c.Authorizer = l })
	if err := e.c.Login(ctx, e.rs.MCPURL()); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	bad := &Loopback{Path: "no-slash", Open: func(context.Context, string) error { return nil }}
	e2 := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) { c.Authorizer = bad })
	if err := e2.c.Login(context.Background(), e2.rs.MCPURL()); !errors.Is(err, ErrConfig) {
		t.Fatalf("err = %v, want ErrConfig", err)
	}
}

// TestCL22BrowserURL: only https (or loopback http) URLs reach a browser;
// the check runs before any program is started.
func TestCL22BrowserURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://as.example.com/authorize?client_id=x&state=y", true},
		{"http://127.0.0.1:8080/authorize", true},
		{"http://localhost/authorize", true},
		{"javascript:alert(1)", false},
		{"JavaScript:alert(1)", false},
		{"data:text/html,<script>alert(1)</script>", false},
		{"file:///etc/passwd", false},
		{"vbscript:msgbox(1)", false},
		{"http://as.example.com/authorize", false},
		{"https://as.example.com/a b", false},
		{"https://as.example.com/\n--flag", false},
		{"--help", false},
		{"https://user:pw@as.example.com/", false},
		{"", false},
	}
	for _, tt := range tests {
		err := checkBrowserURL(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("CL-22 checkBrowserURL(%q) = %v, want ok=%v", tt.url, err, tt.ok)
		}
		if !tt.ok {
			if err := OpenBrowser(context.Background(), tt.url); !errors.Is(err, errUnsafeURL) {
				t.Errorf("OpenBrowser(%q) = %v, want errUnsafeURL before any exec", tt.url, err)
			}
		}
	}
}

func TestPrintURL(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	if err := PrintURL(&sb)(context.Background(), "https://as.example.com/authorize?x=1"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "https://as.example.com/authorize?x=1") {
		t.Errorf("printed %q", sb.String())
	}
}

// TestLoopbackPrefersRegisteredPort: a new authorization listens on the
// port of the loopback redirect URI the client registered, for servers
// that compare loopback ports exactly; when that port is taken it falls
// back to an ephemeral one (RFC 8252 §7.3) and still succeeds.
func TestLoopbackPrefersRegisteredPort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	visit := func(_ context.Context, authURL string) error {
		go func() { // the browser: automatic approval, then the redirect
			if resp, err := http.Get(authURL); err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) { c.Authorizer = &Loopback{Open: visit} })
	redirectPort := func(i int) string {
		az := e.as.Authorizations()
		if len(az) <= i {
			t.Fatalf("%d authorizations, want %d", len(az), i+1)
		}
		u, err := url.Parse(az[i].Get("redirect_uri"))
		if err != nil || u.Hostname() != "127.0.0.1" {
			t.Fatalf("redirect_uri %q", az[i].Get("redirect_uri"))
		}
		return u.Port()
	}
	reauthorize := func() {
		t.Helper()
		if err := e.c.Logout(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
		t.Fatal(err)
	}
	registered := redirectPort(0)
	reauthorize()
	if got := redirectPort(1); got != registered {
		t.Errorf("re-authorization listened on port %s, not the registered %s", got, registered)
	}
	squatter, err := net.Listen("tcp4", "127.0.0.1:"+registered)
	if err != nil {
		t.Skipf("the registered port was taken meanwhile: %v", err)
	}
	defer squatter.Close()
	reauthorize()
	if got := redirectPort(2); got == registered || got == "" {
		t.Errorf("with the registered port taken, listened on %q", got)
	}
	if n := len(e.as.Registrations()); n != 1 {
		t.Errorf("%d registrations, want 1 (a loopback redirect may differ in port)", n)
	}
}
