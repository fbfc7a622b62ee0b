package client_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

var formField = regexp.MustCompile(`name="(request|csrf_token|user_code)" value="([^"]*)"`)

// answerDevice plays the user at the verification page: it follows
// verification_uri_complete, submits the filled-in code, and answers the
// consent page with action ("approve" or "deny").
func answerDevice(p *client.DevicePrompt, action string) error {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := func(resp *http.Response, err error) (url.Values, error) {
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return nil, errors.New("verification page: " + resp.Status)
		}
		f := url.Values{}
		for _, m := range formField.FindAllStringSubmatch(string(body), -1) {
			f.Set(m[1], html.UnescapeString(m[2]))
		}
		return f, nil
	}
	post := func(target string, f url.Values) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		return hc.Do(req)
	}
	f, err := page(hc.Get(p.VerificationURIComplete))
	if err != nil {
		return err
	}
	if f.Get("user_code") != p.UserCode {
		return errors.New("verification_uri_complete did not fill the code in")
	}
	consent, err := page(post(p.VerificationURI, f))
	if err != nil {
		return err
	}
	consent.Set("action", action)
	consent.Del("user_code")
	resp, err := post(strings.TrimSuffix(p.VerificationURI, "/device")+"/consent", consent)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// deviceEnv is an authorization server offering the device grant, a
// resource server, and what the client's device flow did.
type deviceEnv struct {
	clock  *oauthtest.Clock
	rs     *testRS
	issuer string

	mu      sync.Mutex
	prompts []*client.DevicePrompt
	sleeps  []time.Duration
}

func newDeviceEnv(t *testing.T, wrap func(http.Handler) http.Handler, mutate func(*authserver.Config)) *deviceEnv {
	t.Helper()
	e := &deviceEnv{clock: oauthtest.NewClock(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC))}
	ln := listen(t)
	e.issuer = issuerOf(ln)
	srv := newAS(t, e.issuer, e.clock, func(c *authserver.Config) {
		c.Device = &authserver.DeviceConfig{}
		c.DPoP = &authserver.DPoPConfig{}
		if mutate != nil {
			mutate(c)
		}
	})
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(srv)
	}
	serveOn(t, ln, h)
	e.rs = startRS(t, e.clock, e.issuer, false)
	return e
}

// flow is a DeviceFlow whose user answers action, and whose sleeps
// advance the test clock.
func (e *deviceEnv) flow(action string) *client.DeviceFlow {
	return &client.DeviceFlow{
		Show: func(_ context.Context, p *client.DevicePrompt) error {
			e.mu.Lock()
			e.prompts = append(e.prompts, p)
			e.mu.Unlock()
			if action == "" {
				return nil // the user never answers
			}
			return answerDevice(p, action)
		},
		Sleep: func(ctx context.Context, d time.Duration) error {
			e.mu.Lock()
			e.sleeps = append(e.sleeps, d)
			e.mu.Unlock()
			e.clock.Advance(d)
			return ctx.Err()
		},
	}
}

// TestDeviceLogin: a client without a browser logs in through the
// device flow, with the resource binding and a DPoP-bound token.
func TestDeviceLogin(t *testing.T) {
	t.Parallel()
	e := newDeviceEnv(t, nil, nil)
	c := newClient(t, e.clock, func(cfg *client.Config) {
		cfg.Authorizer, cfg.Device, cfg.DPoP = nil, e.flow("approve"), &client.DPoPConfig{}
	})
	resp, err := call(t, c, e.rs.url)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("call: %v %v", resp, err)
	}
	if auth, proof := e.rs.last(); !strings.HasPrefix(auth, dpop.Scheme+" ") || proof == "" {
		t.Fatalf("not a DPoP-bound token: %q", auth)
	}
	if len(e.prompts) != 1 || e.prompts[0].Resource != e.rs.url || e.prompts[0].Issuer != e.issuer ||
		!strings.HasPrefix(e.prompts[0].VerificationURI, e.issuer+"/device") {
		t.Fatalf("prompts %+v", e.prompts)
	}
	if len(e.sleeps) != 1 || e.sleeps[0] != 5*time.Second {
		t.Fatalf("sleeps %v", e.sleeps)
	}
}

// slowDown answers the first n device-code polls with slow_down, and
// counts the polls.
type slowDown struct {
	next  http.Handler
	mu    sync.Mutex
	n     int
	polls int
	// always answers every poll with this error instead, when set.
	always oauthmeta.ErrorCode
}

func (s *slowDown) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" && r.Method == http.MethodPost {
		_ = r.ParseForm()
		if r.PostForm.Get("grant_type") == oauthmeta.GrantTypeDeviceCode {
			s.mu.Lock()
			s.polls++
			code := s.always
			if code == "" && s.n > 0 {
				s.n--
				code = oauthmeta.CodeSlowDown
			}
			s.mu.Unlock()
			if code != "" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(oauthmeta.Error{Code: code})
				return
			}
		}
	}
	s.next.ServeHTTP(w, r)
}

// TestDeviceSlowDown: each slow_down adds five seconds to the interval,
// for every later poll.
func TestDeviceSlowDown(t *testing.T) {
	t.Parallel()
	sd := &slowDown{n: 2}
	e := newDeviceEnv(t, func(h http.Handler) http.Handler { sd.next = h; return sd }, nil)
	c := newClient(t, e.clock, func(cfg *client.Config) { cfg.Authorizer, cfg.Device = nil, e.flow("approve") })
	if resp, err := call(t, c, e.rs.url); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("call: %v %v", resp, err)
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second}
	if len(e.sleeps) != 3 || e.sleeps[0] != want[0] || e.sleeps[1] != want[1] || e.sleeps[2] != want[2] {
		t.Fatalf("sleeps %v, want %v", e.sleeps, want)
	}
}

// TestDeviceRefusals: expiry (by the client's own clock, and by the
// server's expired_token), denial, ctx, and a server without the grant.
func TestDeviceRefusals(t *testing.T) {
	t.Parallel()
	t.Run("never answered", func(t *testing.T) {
		t.Parallel()
		sd := &slowDown{always: oauthmeta.CodeAuthorizationPending}
		e := newDeviceEnv(t, func(h http.Handler) http.Handler { sd.next = h; return sd }, nil)
		c := newClient(t, e.clock, func(cfg *client.Config) { cfg.Authorizer, cfg.Device = nil, e.flow("") })
		_, err := call(t, c, e.rs.url)
		if !errors.Is(err, client.ErrAuthorization) || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("err = %v", err)
		}
		if sd.polls != 600/5-1 { // the last sleep reaches the expiry: no poll after it
			t.Fatalf("%d polls", sd.polls)
		}
	})
	t.Run("expired_token", func(t *testing.T) {
		t.Parallel()
		sd := &slowDown{always: oauthmeta.CodeExpiredToken}
		e := newDeviceEnv(t, func(h http.Handler) http.Handler { sd.next = h; return sd }, nil)
		c := newClient(t, e.clock, func(cfg *client.Config) { cfg.Authorizer, cfg.Device = nil, e.flow("") })
		if _, err := call(t, c, e.rs.url); !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeExpiredToken}) || sd.polls != 1 {
			t.Fatalf("err = %v after %d polls", err, sd.polls)
		}
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		e := newDeviceEnv(t, nil, nil)
		c := newClient(t, e.clock, func(cfg *client.Config) { cfg.Authorizer, cfg.Device = nil, e.flow("deny") })
		_, err := call(t, c, e.rs.url)
		if !errors.Is(err, client.ErrAuthorization) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeAccessDenied}) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		t.Parallel()
		e := newDeviceEnv(t, nil, nil)
		ctx, cancel := context.WithCancel(context.Background())
		flow := e.flow("")
		flow.Sleep = func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() }
		c := newClient(t, e.clock, func(cfg *client.Config) { cfg.Authorizer, cfg.Device = nil, flow })
		if err := c.Login(ctx, e.rs.url); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("not offered", func(t *testing.T) {
		t.Parallel()
		e := newDeviceEnv(t, nil, func(c *authserver.Config) { c.Device = nil })
		c := newClient(t, e.clock, func(cfg *client.Config) { cfg.Authorizer, cfg.Device = nil, e.flow("approve") })
		if _, err := call(t, c, e.rs.url); !errors.Is(err, client.ErrDiscovery) || len(e.prompts) != 0 {
			t.Fatalf("err = %v, prompts %d", err, len(e.prompts))
		}
	})
}

// TestDeviceFallback: beside an Authorizer, the device flow runs only
// when the Authorizer reports ErrNoBrowser.
func TestDeviceFallback(t *testing.T) {
	t.Parallel()
	e := newDeviceEnv(t, nil, nil)
	noBrowser := client.AuthorizerFunc(func(context.Context, *client.AuthorizationRequest) (*url.URL, error) {
		return nil, client.ErrNoBrowser
	})
	c := newClient(t, e.clock, func(cfg *client.Config) { cfg.Authorizer, cfg.Device = noBrowser, e.flow("approve") })
	if resp, err := call(t, c, e.rs.url); err != nil || resp.StatusCode != http.StatusOK || len(e.prompts) != 1 {
		t.Fatalf("fallback: %v %v, prompts %d", resp, err, len(e.prompts))
	}
	// Loopback whose browser cannot start: the same fallback.
	e3 := newDeviceEnv(t, nil, nil)
	headless := &client.Loopback{Open: func(context.Context, string) error {
		return fmt.Errorf("%w: xdg-open: exit status 3", client.ErrNoBrowser)
	}}
	c = newClient(t, e3.clock, func(cfg *client.Config) { cfg.Authorizer, cfg.Device = headless, e3.flow("approve") })
	if resp, err := call(t, c, e3.rs.url); err != nil || resp.StatusCode != http.StatusOK || len(e3.prompts) != 1 {
		t.Fatalf("loopback fallback: %v %v, prompts %d", resp, err, len(e3.prompts))
	}
	other := client.AuthorizerFunc(func(context.Context, *client.AuthorizationRequest) (*url.URL, error) {
		return nil, errors.New("user closed the window")
	})
	e2 := newDeviceEnv(t, nil, nil)
	c = newClient(t, e2.clock, func(cfg *client.Config) { cfg.Authorizer, cfg.Device = other, e2.flow("approve") })
	if _, err := call(t, c, e2.rs.url); err == nil || len(e2.prompts) != 0 {
		t.Fatalf("another failure fell back: %v, prompts %d", err, len(e2.prompts))
	}
}

// scopeRS demands the scope "admin": a token without it gets 403
// insufficient_scope.
type scopeRS struct{ *testRS }

func (s scopeRS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && !strings.Contains(claimScope(tok), "admin") {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp admin"`)
		w.WriteHeader(http.StatusForbidden)
		return
	}
	s.testRS.ServeHTTP(w, r)
}

// claimScope reads the unverified "scope" claim of a JWT.
func claimScope(jwt string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Scope string `json:"scope"`
	}
	_ = json.Unmarshal(payload, &c)
	return c.Scope
}

// TestDeviceStepUp: a 403 insufficient_scope runs the device flow again
// with the wider scopes.
func TestDeviceStepUp(t *testing.T) {
	t.Parallel()
	e := newDeviceEnv(t, nil, func(c *authserver.Config) { c.Scopes = []string{"mcp", "admin"} })
	srs := scopeRS{e.rs}
	ln := listen(t)
	serveOn(t, ln, srs)
	e.rs.url = issuerOf(ln) + "/mcp"
	c := newClient(t, e.clock, func(cfg *client.Config) { cfg.Authorizer, cfg.Device = nil, e.flow("approve") })
	resp, err := call(t, c, e.rs.url)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("call: %v %v", resp, err)
	}
	if len(e.prompts) != 2 {
		t.Fatalf("%d device authorizations, want 2", len(e.prompts))
	}
	if auth, _ := e.rs.last(); !strings.Contains(claimScope(strings.TrimPrefix(auth, "Bearer ")), "admin") {
		t.Fatalf("token without admin: %q", auth)
	}
}
