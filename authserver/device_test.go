package authserver

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/identity"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

const (
	tvID  = "tv-app"
	tv2ID = "tv-app-2"
)

// deviceHarness is a server offering the device grant to two public
// clients, with the consent page.
func deviceHarness(t *testing.T, mutate func(*Config)) *harness {
	return newHarness(t, "", func(c *Config) {
		c.Consent = ConsentPrompt
		c.Device = &DeviceConfig{}
		grants := []string{oauthmeta.GrantTypeDeviceCode, oauthmeta.GrantTypeRefreshToken}
		c.Clients = append(c.Clients, Client{ID: tvID, Name: "TV App", GrantTypes: grants},
			Client{ID: tv2ID, Name: "Other TV App", GrantTypes: grants})
		if mutate != nil {
			mutate(c)
		}
	})
}

// startDevice asks for a device code for client.
func (h *harness) startDevice(client string, extra url.Values) (*oauthmeta.DeviceAuthorizationResponse, tokenResult) {
	h.t.Helper()
	form := url.Values{"client_id": {client}, "scope": {"mcp:read"}}
	for k, v := range extra {
		form[k] = v
	}
	resp, body := h.post(pathDeviceAuthorize, form, "", "")
	res := tokenResult{status: resp.StatusCode, header: resp.Header, body: body}
	if resp.StatusCode != http.StatusOK {
		res.err, _ = oauthmeta.ParseError(body)
		return nil, res
	}
	d, err := oauthmeta.ParseDeviceAuthorizationResponse(body)
	if err != nil {
		h.t.Fatalf("device authorization response: %v: %s", err, body)
	}
	return d, res
}

// poll asks the token endpoint once for client's device code.
func (h *harness) poll(client, deviceCode string, extra url.Values) tokenResult {
	h.t.Helper()
	form := url.Values{"grant_type": {oauthmeta.GrantTypeDeviceCode}, "device_code": {deviceCode}, "client_id": {client}}
	for k, v := range extra {
		form[k] = v
	}
	return h.token(form, "", "")
}

var deviceCSRF = regexp.MustCompile(`name="csrf_token" value="([^"]*)"`)

// enterCode loads the verification page in b and submits code; it returns
// the answer (the consent page, or the page again with an error).
func (b *browser) enterCode(code string) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.client.Get(b.h.url(pathDevice))
	if err != nil {
		b.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := deviceCSRF.FindStringSubmatch(string(body))
	if m == nil {
		b.t.Fatalf("no form on the verification page: %d %s", resp.StatusCode, body)
	}
	return b.postDevice(url.Values{"csrf_token": {m[1]}, "user_code": {code}})
}

func (b *browser) postDevice(form url.Values) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.h.url(pathDevice), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// answer enters code and answers the consent page with action.
func (b *browser) answer(code, action string) (*http.Response, string) {
	b.t.Helper()
	resp, body := b.enterCode(code)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="user-code"`) {
		b.t.Fatalf("want the consent page with the code, got %d: %s", resp.StatusCode, body)
	}
	form := url.Values{"action": {action}}
	for _, m := range hiddenField.FindAllStringSubmatch(body, -1) {
		form.Set(m[1], m[2])
	}
	resp = b.submit(form, nil)
	return resp, ""
}

func TestDeviceMetadata(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, nil)
	m := h.as.Metadata()
	if m.DeviceAuthorizationEndpoint != h.url(pathDeviceAuthorize) || !m.SupportsGrantType(oauthmeta.GrantTypeDeviceCode) {
		t.Fatalf("metadata: %q %v", m.DeviceAuthorizationEndpoint, m.GrantTypesSupported)
	}
	off := newHarness(t, "", nil)
	if m := off.as.Metadata(); m.DeviceAuthorizationEndpoint != "" || m.SupportsGrantType(oauthmeta.GrantTypeDeviceCode) {
		t.Fatal("device grant advertised without Config.Device")
	}
	if resp, _ := off.post(pathDeviceAuthorize, url.Values{"client_id": {publicID}}, "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("endpoint without Config.Device: %d", resp.StatusCode)
	}
}

func TestDeviceConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []DeviceConfig{
		{CodeTTL: 30 * time.Second}, {CodeTTL: time.Hour}, {Interval: 1500 * time.Millisecond},
		{Interval: 20 * time.Minute}, {FailedLookups: -1}, {FailedLookupsPerIP: -1},
	} {
		if _, err := newDeviceFlow(&c, nil, 10); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestUserCode(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 2000 {
		c := newUserCode()
		if len(c) != userCodeLength || strings.Trim(c, userCodeAlphabet) != "" {
			t.Fatalf("bad code %q", c)
		}
		seen[c] = true
	}
	if len(seen) < 1999 {
		t.Fatalf("only %d distinct codes in 2000", len(seen))
	}
	if bits := userCodeLength * math.Log2(float64(len(userCodeAlphabet))); bits < 34 {
		t.Fatalf("entropy %.1f bits", bits)
	}
	for in, want := range map[string]string{
		"BCDF-GHJK": "BCDFGHJK", "bcdf-ghjk": "BCDFGHJK", "bcdfghjk": "BCDFGHJK", " bc-df gh-jk ": "BCDFGHJK",
	} {
		if got, ok := normalizeUserCode(in); !ok || got != want {
			t.Errorf("normalize(%q) = %q %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "BCDFGHJ", "BCDFGHJKL", "ABCDEFGH", "BCDF_GHJK", "BCDFGHJ\u00e9", strings.Repeat("-", 100)} {
		if _, ok := normalizeUserCode(in); ok {
			t.Errorf("normalize(%q) accepted", in)
		}
	}
}

func TestDeviceAuthorizationRequest(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, func(c *Config) { c.Resources = []string{testResource} })
	d, res := h.startDevice(tvID, url.Values{"resource": {testResource}})
	if d == nil {
		t.Fatalf("%d %s", res.status, res.body)
	}
	if !regexp.MustCompile(`^[`+userCodeAlphabet+`]{4}-[`+userCodeAlphabet+`]{4}$`).MatchString(d.UserCode) ||
		d.VerificationURI != h.url(pathDevice) || d.ExpiresIn != 600 || d.Interval != 5 ||
		d.VerificationURIComplete != h.url(pathDevice)+"?user_code="+d.UserCode || len(d.DeviceCode) != 43 {
		t.Fatalf("response %+v", d)
	}
	if res.header.Get("Cache-Control") != "no-store" {
		t.Fatal("no Cache-Control: no-store")
	}
	for name, tc := range map[string]struct {
		client string
		form   url.Values
		code   oauthmeta.ErrorCode
	}{
		"client without the grant": {publicID, nil, oauthmeta.CodeUnauthorizedClient},
		"unknown client":           {"nobody", nil, oauthmeta.CodeInvalidClient},
		"unsupported scope":        {tvID, url.Values{"scope": {"root"}}, oauthmeta.CodeInvalidScope},
		"resource not served":      {tvID, url.Values{"resource": {"https://evil.example/mcp"}}, oauthmeta.CodeInvalidTarget},
		"repeated scope":           {tvID, url.Values{"scope": {"mcp:read", "mcp:write"}}, oauthmeta.CodeInvalidRequest},
	} {
		if _, res := h.startDevice(tc.client, tc.form); res.err == nil || res.err.Code != tc.code {
			t.Errorf("%s: %d %s, want %s", name, res.status, res.body, tc.code)
		}
	}
}

// TestDeviceFlow: the whole grant, each refusal of the token endpoint
// along the way, and the single use of the code.
func TestDeviceFlow(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, nil)
	d, _ := h.startDevice(tvID, url.Values{"resource": {testResource}})

	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeAuthorizationPending)
	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeSlowDown)
	h.clock.Advance(6 * time.Second) // the interval is now 10 s
	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeSlowDown)
	h.clock.Advance(16 * time.Second)
	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeAuthorizationPending)
	wantError(t, h.poll(tvID, "no-such-code", nil), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	wantError(t, h.poll(tv2ID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)

	b := newBrowser(t, h)
	resp, _ := b.answer(strings.ToLower(strings.ReplaceAll(d.UserCode, "-", "")), "approve")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approval: %d", resp.StatusCode)
	}
	h.clock.Advance(21 * time.Second)
	wantError(t, h.poll(tvID, d.DeviceCode, url.Values{"resource": {"https://other.example/mcp"}}),
		http.StatusBadRequest, oauthmeta.CodeInvalidTarget)
	h.clock.Advance(21 * time.Second)
	res := h.poll(tvID, d.DeviceCode, nil)
	if res.status != http.StatusOK || res.tok.RefreshToken == "" {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	_, claims := h.verifyJWT(res.tok.AccessToken)
	if claims["aud"] != testResource || claims["client_id"] != tvID || claims["sub"] != "demo-user" || claims["scope"] != "mcp:read" {
		t.Fatalf("claims %v", claims)
	}
	// A second redemption fails and revokes what the first produced.
	h.clock.Advance(21 * time.Second)
	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	refresh := h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {res.tok.RefreshToken}, "client_id": {tvID}}, "", "")
	wantError(t, refresh, http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	if m, _ := h.introspect(res.tok.AccessToken); m["active"] != false {
		t.Fatalf("access token still active after the replay: %v", m)
	}
	// The code is answered: entering it again is a wrong code.
	if resp, body := b.enterCode(d.UserCode); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `id="device-error"`) {
		t.Fatalf("used code entered again: %d", resp.StatusCode)
	}
}

func TestDeviceDenied(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, nil)
	d, _ := h.startDevice(tvID, nil)
	b := newBrowser(t, h)
	if resp, _ := b.answer(d.UserCode, "deny"); resp.StatusCode != http.StatusOK {
		t.Fatalf("deny: %d", resp.StatusCode)
	}
	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeAccessDenied)

	// Deny mode refuses at once.
	h = deviceHarness(t, func(c *Config) { c.Consent = ConsentDeny })
	d, _ = h.startDevice(tvID, nil)
	if resp, _ := newBrowser(t, h).enterCode(d.UserCode); resp.StatusCode != http.StatusOK {
		t.Fatalf("deny mode: %d", resp.StatusCode)
	}
	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeAccessDenied)
}

func TestDeviceExpired(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, nil)
	d, _ := h.startDevice(tvID, nil)
	h.clock.Advance(10 * time.Minute)
	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeExpiredToken)
	if resp, _ := newBrowser(t, h).enterCode(d.UserCode); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("expired code entered: %d", resp.StatusCode)
	}
	// After the grace period the sweep drops it: unknown.
	h.clock.Advance(DeviceCodeGrace + 2*time.Minute)
	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
}

// TestDeviceAutoConsent: even with automatic consent, the page asks.
func TestDeviceAutoConsent(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, func(c *Config) { c.Consent = ConsentAuto })
	d, _ := h.startDevice(tvID, nil)
	b := newBrowser(t, h)
	if resp, _ := b.answer(d.UserCode, "approve"); resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	if res := h.poll(tvID, d.DeviceCode, nil); res.status != http.StatusOK {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
}

func TestDevicePageForm(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, nil)
	d, _ := h.startDevice(tvID, nil)
	b := newBrowser(t, h)
	resp, err := b.client.Get(d.VerificationURIComplete)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `value="`+d.UserCode+`"`) || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("verification_uri_complete does not fill the code in: %s", body)
	}
	// Without the CSRF token, from another site, or from a browser without
	// the cookie: refused, and nothing decided.
	if resp, _ := b.postDevice(url.Values{"user_code": {d.UserCode}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("no CSRF token: %d", resp.StatusCode)
	}
	m := deviceCSRF.FindStringSubmatch(string(body))
	other := newBrowser(t, h)
	if resp, _ := other.postDevice(url.Values{"csrf_token": {m[1]}, "user_code": {d.UserCode}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another browser: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, h.url(pathDevice), strings.NewReader(url.Values{"csrf_token": {m[1]}, "user_code": {d.UserCode}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := b.client.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site: %v %v", resp, err)
	}
	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeAuthorizationPending)
}

// TestDeviceGuessing: wrong user codes are bounded per address, and then
// across all addresses, and a right code is refused too while the budget
// is spent.
func TestDeviceGuessing(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, func(c *Config) { c.Device = &DeviceConfig{FailedLookupsPerIP: 3, FailedLookups: 5} })
	d, _ := h.startDevice(tvID, nil)
	b := newBrowser(t, h)
	for i := range 3 {
		if resp, _ := b.enterCode("BBBB-BBB" + string(userCodeAlphabet[i])); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("guess %d: %d", i, resp.StatusCode)
		}
	}
	resp, _ := b.enterCode(d.UserCode)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("after 3 wrong codes: %d", resp.StatusCode)
	}
	h.clock.Advance(time.Minute)
	if resp, _ := b.answer(d.UserCode, "approve"); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a minute: %d", resp.StatusCode)
	}
	// The global budget: 5 a minute from every address together.
	f := h.as.device
	for i := range 5 {
		f.failed(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}))
	}
	if f.mayLookUp(netip.MustParseAddr("198.51.100.7")) {
		t.Fatal("global budget not enforced")
	}
}

// TestDeviceBroker: the device login goes through the upstream login and
// the allow-list, and the grant is for the provider's user.
func TestDeviceBroker(t *testing.T) {
	t.Parallel()
	h, p := upstreamHarness(t, func(c *Config) {
		c.Device = &DeviceConfig{}
		c.Clients = append(c.Clients, Client{ID: tvID, GrantTypes: []string{oauthmeta.GrantTypeDeviceCode}})
	})
	login := func(d *oauthmeta.DeviceAuthorizationResponse) *http.Response {
		b := newBrowser(t, h)
		resp, body := b.enterCode(d.UserCode)
		if !strings.Contains(body, `id="upstream-next"`) {
			t.Fatalf("consent page does not announce the login: %d", resp.StatusCode)
		}
		form := url.Values{"action": {"approve"}}
		for _, m := range hiddenField.FindAllStringSubmatch(body, -1) {
			form.Set(m[1], m[2])
		}
		up := location(t, b.submit(form, nil))
		back := url.Values{"state": {up.Query().Get("state")}, "code": {"c"}}
		resp, err := b.client.Get(h.url(pathUpstreamCallback + "?" + back.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	d, _ := h.startDevice(tvID, nil)
	if resp := login(d); resp.StatusCode != http.StatusOK {
		t.Fatalf("callback: %d", resp.StatusCode)
	}
	res := h.poll(tvID, d.DeviceCode, nil)
	if res.status != http.StatusOK {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	if _, claims := h.verifyJWT(res.tok.AccessToken); claims["sub"] != identity.Subject(fakeLoginIssuer, "alice-123") {
		t.Fatalf("sub %v", claims["sub"])
	}
	// A user the allow-list refuses: access_denied reaches the device.
	p.setIdentity(&UpstreamIdentity{Issuer: fakeLoginIssuer, Subject: "mallory", Email: "m@evil.example", EmailVerified: true})
	d, _ = h.startDevice(tvID, nil)
	login(d)
	wantError(t, h.poll(tvID, d.DeviceCode, nil), http.StatusBadRequest, oauthmeta.CodeAccessDenied)
}

func TestDeviceCodeStoreBound(t *testing.T) {
	t.Parallel()
	m := NewMemoryStore()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range MaxDeviceCodes {
		k := randomToken(8)
		if err := m.SaveDeviceCode(t.Context(), &DeviceCode{Key: k, UserCodeKey: k, IssuedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
	}
	err := m.SaveDeviceCode(t.Context(), &DeviceCode{Key: "x", UserCodeKey: "x", IssuedAt: now, ExpiresAt: now.Add(time.Minute)})
	if oe, ok := err.(*oauthmeta.Error); !ok || oe.Code != oauthmeta.CodeTemporarilyUnavailable {
		t.Fatalf("full store: %v", err)
	}
	later := now.Add(2 * time.Minute)
	if err := m.SaveDeviceCode(t.Context(), &DeviceCode{Key: "y", UserCodeKey: "y", IssuedAt: later, ExpiresAt: later.Add(time.Minute)}); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}

// jsonKeys lists the members of a JSON object, for checking a response's
// shape.
func jsonKeys(t *testing.T, body []byte) []string {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestDeviceResponseShape(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, nil)
	_, res := h.startDevice(tvID, nil)
	want := []string{"device_code", "expires_in", "interval", "user_code", "verification_uri", "verification_uri_complete"}
	if got := jsonKeys(t, res.body); !slices.Equal(got, want) {
		t.Fatalf("members %v", got)
	}
}

// FuzzNormalizeUserCode: what the user types is either refused or a code
// of the alphabet and length that could have been issued.
func FuzzNormalizeUserCode(f *testing.F) {
	for _, s := range []string{"BCDF-GHJK", "bcdf ghjk", "", "ÄBCD-EFGH", strings.Repeat("B", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		code, ok := normalizeUserCode(s)
		if !ok {
			return
		}
		if len(code) != userCodeLength || strings.Trim(code, userCodeAlphabet) != "" {
			t.Fatalf("normalize(%q) = %q", s, code)
		}
		if again, ok := normalizeUserCode(displayUserCode(code)); !ok || again != code {
			t.Fatalf("the displayed form of %q does not read back", code)
		}
	})
}
