package clientmeta

import (
	"errors"
	"net/http"
	"os"
	"testing"
	"time"
)

// FuzzParseDocument: any input either parses into a document that passes
// its own validation, or fails with ErrInvalidDocument. Never a panic.
func FuzzParseDocument(f *testing.F) {
	const id = "https://c.example/client.json"
	f.Add([]byte(docJSON(id)), id)
	if b, err := os.ReadFile("testdata/document.json"); err == nil {
		f.Add(b, id)
	}
	f.Add([]byte(`{"client_id":"https://c.example/client.json","client_secret":"x"}`), id)
	f.Add([]byte(`{"client_id":1}`), id)
	f.Add([]byte(`{"redirect_uris":"x"}`), id)
	f.Add([]byte(`{"client_id":"a","client_id":"b"}`), "a")
	f.Add([]byte(`[]`), id)
	f.Add([]byte(`{"jwks":{"keys":[]},"token_endpoint_auth_method":"private_key_jwt"}`), id)
	f.Fuzz(func(t *testing.T, data []byte, url string) {
		doc, err := ParseDocument(data, url)
		if err != nil {
			if !errors.Is(err, ErrInvalidDocument) {
				t.Fatalf("error does not wrap ErrInvalidDocument: %v", err)
			}
			return
		}
		if doc.ClientID != url {
			t.Fatalf("accepted client_id %q for URL %q", doc.ClientID, url)
		}
		if err := ValidateClientID(doc.ClientID); err != nil {
			t.Fatalf("accepted an invalid client_id: %v", err)
		}
		if m := doc.AuthMethod(); m != "none" && m != "private_key_jwt" {
			t.Fatalf("accepted auth method %q", m)
		}
	})
}

// FuzzValidateClientID: an accepted client_id is an https URL with a path
// and no fragment, user information or query.
func FuzzValidateClientID(f *testing.F) {
	for _, s := range []string{
		"https://c.example/x.json", "https://c:8443/x.json", "http://c/x", "https://c",
		"https://c/a/../x", "https://c/%2e%2e/x", "https://u:p@c/x", "https://c/x#f", "https://c/x?y",
		"https://[::1]/x", "https://c/%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		u, err := parseClientID(id)
		if err != nil {
			if !errors.Is(err, ErrInvalidClientID) {
				t.Fatalf("error does not wrap ErrInvalidClientID: %v", err)
			}
			return
		}
		if u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.Fragment != "" || u.RawQuery != "" || u.Path == "" || u.Path == "/" {
			t.Fatalf("accepted %q", id)
		}
	})
}

// FuzzCheckRedirectURI: an accepted redirect URI never has a fragment,
// never uses javascript:/data:/file:, and uses plain http only to loopback.
func FuzzCheckRedirectURI(f *testing.F) {
	for _, s := range []string{
		"https://a/cb", "http://127.0.0.1:1/cb", "http://evil/cb", "javascript:alert(1)",
		"JavaScript:alert(1)", "com.example:/cb", "https://a/cb#x", "data:,x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if err := CheckRedirectURI(raw); err != nil {
			return
		}
		if LocalhostOnly([]string{raw}) {
			return
		}
		for _, bad := range refusedRedirectSchemes {
			if len(raw) > len(bad) && (raw[:len(bad)+1] == bad+":") {
				t.Fatalf("accepted %q", raw)
			}
		}
	})
}

// FuzzFreshness: cache lifetimes from arbitrary headers stay within
// [0, max].
func FuzzFreshness(f *testing.F) {
	f.Add("max-age=60", "", "", "")
	f.Add("no-store", "", "", "")
	f.Add("max-age=99999999999999999999", "", "", "5")
	f.Add("", "Tue, 28 Jul 2026 12:10:00 GMT", "Tue, 28 Jul 2026 12:00:00 GMT", "")
	f.Add("max-age=-1", "0", "x", "-5")
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, cc, expires, date, age string) {
		h := http.Header{}
		for k, v := range map[string]string{"Cache-Control": cc, "Expires": expires, "Date": date, "Age": age} {
			if v != "" {
				h.Set(k, v)
			}
		}
		got := freshness(h, now, DefaultTTL, DefaultMaxTTL)
		if got < 0 || got > DefaultMaxTTL {
			t.Fatalf("freshness = %v", got)
		}
	})
}
