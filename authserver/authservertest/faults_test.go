package authservertest_test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

const (
	clientID = "public-app"
	callback = "http://127.0.0.1/callback"
)

// flow is one authorization code flow against a server with faults.
type flow struct {
	t  *testing.T
	ts *authservertest.Server
	hc *http.Client
}

func newFlow(t *testing.T, cfg authserver.Config, faults ...authservertest.Fault) *flow {
	t.Helper()
	cfg.Consent = authserver.ConsentAuto
	cfg.Clients = []authserver.Client{{ID: clientID, RedirectURIs: []string{callback}}}
	cfg.RateLimit = authserver.RateLimit{PerIP: math.Inf(1), PerClient: math.Inf(1), PerIPBrowser: math.Inf(1)}
	ts := authservertest.NewServer(t, cfg, faults...)
	hc := ts.Client()
	hc.Timeout = 10 * time.Second
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &flow{t: t, ts: ts, hc: hc}
}

// metadata fetches the document at a well-known URL of the issuer.
func (f *flow) metadata(rawURL string) (oauthmeta.AuthServerMetadata, map[string]any) {
	f.t.Helper()
	resp, err := f.hc.Get(rawURL)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m oauthmeta.AuthServerMetadata
	var members map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &m) != nil || json.Unmarshal(body, &members) != nil {
		f.t.Fatalf("metadata %s: %d %s", rawURL, resp.StatusCode, body)
	}
	return m, members
}

// authorize runs an authorization request and returns the response's
// query and the verifier.
func (f *flow) authorize() (url.Values, string) {
	f.t.Helper()
	v := pkce.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {callback}, "state": {"st-1"},
		"code_challenge": {pkce.Challenge(v)}, "code_challenge_method": {"S256"}}
	resp, err := f.hc.Get(f.ts.Issuer() + "/authorize?" + q.Encode())
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), callback+"?") {
		f.t.Fatalf("authorize: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query(), v
}

// exchange redeems code and returns the token endpoint's status.
func (f *flow) exchange(code, verifier string) int {
	f.t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"client_id": {clientID}, "redirect_uri": {callback}}
	resp, err := f.hc.PostForm(f.ts.Issuer()+"/token", form)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestFaults covers each fault clients are tested against (RFC 9207 and
// RFC 8414 §3.3 mix-up cases), at both well-known locations and with an
// issuer path, and that the server still enforces PKCE and issues working
// codes under each.
func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault      authservertest.Fault
		wantIss    string // "" = absent; "ISSUER" = the real issuer
		check      func(m oauthmeta.AuthServerMetadata, members map[string]any, issuer string) bool
		hasIssSent bool
	}{
		{authservertest.OmitIss, "", func(m oauthmeta.AuthServerMetadata, _ map[string]any, _ string) bool {
			return m.AuthorizationResponseISSParameterSupported
		}, false},
		{authservertest.WrongIss, authservertest.WrongIssuer, nil, true},
		{authservertest.TrailingSlashIss, "ISSUER/", nil, true},
		{authservertest.MetadataIssuerMismatch, "ISSUER", func(m oauthmeta.AuthServerMetadata, _ map[string]any, iss string) bool {
			return m.Issuer == iss+"/other"
		}, true},
		{authservertest.OmitPKCEMethods, "ISSUER", func(m oauthmeta.AuthServerMetadata, members map[string]any, _ string) bool {
			_, listed := members["code_challenge_methods_supported"]
			return !m.SupportsS256() && !listed
		}, true},
		{authservertest.OmitIssSupported, "ISSUER", func(m oauthmeta.AuthServerMetadata, members map[string]any, _ string) bool {
			_, listed := members["authorization_response_iss_parameter_supported"]
			return !m.AuthorizationResponseISSParameterSupported && !listed
		}, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.fault), func(t *testing.T) {
			t.Parallel()
			f := newFlow(t, authserver.Config{Issuer: "/tenant1"}, tt.fault)
			urls, err := oauthmeta.AuthServerMetadataURLs(f.ts.Issuer())
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range urls {
				m, members := f.metadata(u)
				if tt.check != nil && !tt.check(m, members, f.ts.Issuer()) {
					t.Fatalf("metadata at %s: %+v", u, members)
				}
				// Everything else is as published by the correct server.
				if m.TokenEndpoint != f.ts.Issuer()+"/token" || len(m.GrantTypesSupported) == 0 {
					t.Fatalf("metadata at %s lost members: %+v", u, members)
				}
			}
			q, v := f.authorize()
			want := tt.wantIss
			if rest, ok := strings.CutPrefix(want, "ISSUER"); ok {
				want = f.ts.Issuer() + rest
			}
			if got, sent := q.Get("iss"), q.Has("iss"); sent != tt.hasIssSent || got != want {
				t.Fatalf("iss = %q (sent %v), want %q", got, sent, want)
			}
			if q.Get("state") != "st-1" || q.Get("code") == "" {
				t.Fatalf("authorization response %v", q)
			}
			// The server itself still enforces PKCE and issues working codes.
			if status := f.exchange(q.Get("code"), pkce.GenerateVerifier()); status != http.StatusBadRequest {
				t.Fatalf("exchange with the wrong verifier: %d", status)
			}
			q, v = f.authorize()
			if status := f.exchange(q.Get("code"), v); status != http.StatusOK {
				t.Fatalf("exchange: %d", status)
			}
			// The server's own view of its metadata has no fault.
			if m := f.ts.AS.Metadata(); m.Issuer != f.ts.Issuer() || !m.SupportsS256() || !m.AuthorizationResponseISSParameterSupported {
				t.Fatalf("AS.Metadata changed: %+v", m)
			}
		})
	}
}

// TestFaultsTogether: faults combine; of the iss faults, OmitIss wins, then
// WrongIss.
func TestFaultsTogether(t *testing.T) {
	t.Parallel()
	f := newFlow(t, authserver.Config{}, authservertest.TrailingSlashIss, authservertest.WrongIss, authservertest.OmitPKCEMethods)
	if q, _ := f.authorize(); q.Get("iss") != authservertest.WrongIssuer {
		t.Fatalf("iss = %q", q.Get("iss"))
	}
	if m, _ := f.metadata(f.ts.Issuer() + "/.well-known/openid-configuration"); m.SupportsS256() {
		t.Fatal("PKCE methods still published")
	}
	g := newFlow(t, authserver.Config{}, authservertest.WrongIss, authservertest.OmitIss)
	if q, _ := g.authorize(); q.Has("iss") {
		t.Fatalf("iss = %q", q.Get("iss"))
	}
}

// TestParseFault: every fault by name, and unknown names refused.
func TestParseFault(t *testing.T) {
	t.Parallel()
	for _, f := range authservertest.Faults() {
		got, err := authservertest.ParseFault(" " + string(f) + " ")
		if err != nil || got != f {
			t.Errorf("ParseFault(%q) = %q, %v", f, got, err)
		}
	}
	for _, name := range []string{"", "nonsense", "WRONG-ISS", "wrong_iss"} {
		if _, err := authservertest.ParseFault(name); err == nil || !strings.Contains(err.Error(), "unknown fault") || !strings.Contains(err.Error(), "omit-iss-supported") {
			t.Errorf("ParseFault(%q): %v", name, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("InjectFaults accepted an unknown fault")
		}
	}()
	authservertest.InjectFaults(http.NotFoundHandler(), "wrong_iss")
}

// TestInjectFaultsNone: without faults the handler is returned as is.
func TestInjectFaultsNone(t *testing.T) {
	t.Parallel()
	h := http.NotFoundHandler()
	rec := httptest.NewRecorder()
	authservertest.InjectFaults(h).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-authorization-server", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status %d", rec.Code)
	}
}

// FuzzParseFault: a name either parses to one of Faults, the name without
// surrounding spaces, or is refused; it never panics.
func FuzzParseFault(f *testing.F) {
	for _, ft := range authservertest.Faults() {
		f.Add(string(ft))
	}
	f.Add(" wrong-iss\n")
	f.Add("chaos")
	f.Fuzz(func(t *testing.T, name string) {
		ft, err := authservertest.ParseFault(name)
		if err != nil {
			if ft != "" {
				t.Fatalf("%q: %q with error %v", name, ft, err)
			}
			return
		}
		if !slices.Contains(authservertest.Faults(), ft) || string(ft) != strings.TrimSpace(name) {
			t.Fatalf("%q parsed as %q", name, ft)
		}
	})
}
