package resource

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
)

func TestParseAuthorization(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header, token string
		err           error
	}{
		{"Bearer abc", "abc", nil},
		{"bearer abc", "abc", nil},
		{"BeArEr  abc==", "abc==", nil},
		{"Bearer a.b-c_d~e+f/g=", "a.b-c_d~e+f/g=", nil},
		{"Bearer a b", "", ErrMalformedCredentials},
		{"Bearer ", "", ErrMalformedCredentials},
		{"Bearer", "", ErrMalformedCredentials},
		{"Bearer =abc", "", ErrMalformedCredentials},
		{"Bearer ab=c", "", ErrMalformedCredentials},
		{"Bearer abc\x00", "", ErrMalformedCredentials},
		{"Basic abc", "", ErrNoToken},
		{"DPoP abc", "", ErrNoToken}, // DPoP disabled
		{"", "", ErrNoToken},
		{" Bearer abc", "", ErrNoToken},
		{"Bearer " + strings.Repeat("a", 65), "", ErrTokenTooLarge},
	}
	for _, tt := range tests {
		c, err := parseAuthorization(tt.header, 64, false)
		if !errors.Is(err, tt.err) || (err == nil && (c.token != tt.token || c.scheme != "Bearer")) {
			t.Errorf("%q: %+v %v", tt.header, c, err)
		}
	}
}

// TestParseAuthorizationToken: a token is an RFC 6750 b64token (RS-16),
// JWS-shaped or not.
func TestParseAuthorizationToken(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{"a.b.c", "aB-_0.b.", "a.b.c=", "a.b.c.d", ".b.c", "a..c", "a~b.c.d", "opaque+/token=="} {
		c, err := parseAuthorization("Bearer "+tok, 64, false)
		if err != nil || c.token != tok || !isB64Token(c.token) || (c.shape == shapeJWS) != jwtverify.LooksLikeJWS(tok) {
			t.Errorf("%q: %+v %v", tok, c, err)
		}
	}
	for _, tok := range []string{"=", "a=b", "a,b", "a\xffb", "a\"b"} {
		if _, err := parseAuthorization("Bearer "+tok, 64, false); !errors.Is(err, ErrMalformedCredentials) {
			t.Errorf("%q: %v", tok, err)
		}
	}
}

// TestParseAuthorizationDPoP: with DPoP enabled, "DPoP <token>" is the
// RFC 9449 §7.1 scheme, with the Bearer token syntax; a failed parse still
// names the scheme the request used (for the challenge, RFC 9449 §7.2).
func TestParseAuthorizationDPoP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header, scheme, token string
		err                   error
	}{
		{"DPoP abc", "DPoP", "abc", nil},
		{"dpop  a.b-c_d~e+f/g=", "DPoP", "a.b-c_d~e+f/g=", nil},
		{"Bearer abc", "Bearer", "abc", nil},
		{"DPoP", "DPoP", "", ErrMalformedCredentials},
		{"DPoP a b", "DPoP", "", ErrMalformedCredentials},
		{"DPoP " + strings.Repeat("a", 65), "DPoP", "", ErrTokenTooLarge},
		{"Bearer a,b", "Bearer", "", ErrMalformedCredentials},
		{"DPoPx abc", "", "", ErrNoToken},
	}
	for _, tt := range tests {
		c, err := parseAuthorization(tt.header, 64, true)
		if !errors.Is(err, tt.err) || c.scheme != tt.scheme || c.token != tt.token {
			t.Errorf("%q: %+v %v", tt.header, c, err)
		}
	}
}

func TestQueryHasToken(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]bool{
		"": false, "a=1": false, "access_token=x": true, "ACCESS_TOKEN=x": true,
		"a=1&access%5Ftoken=x": true, "access=1": false, "access_token": true, "%zz&access": true,
	} {
		if got := queryHasToken(q); got != want {
			t.Errorf("%q: %v", q, got)
		}
	}
}

// FuzzExtractCredential: the credential parser never panics and never
// returns a token that is not an RFC 6750 b64token.
func FuzzExtractCredential(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer a b", "Bearer", "Basic x", "Bearer a.b.c", "Bearer ==", "", "DPoP a.b.c", "dpop"} {
		f.Add(s, "", false)
		f.Add(s, "", true)
	}
	f.Add("Bearer x", "access_token=y", true)
	f.Fuzz(func(t *testing.T, header, query string, withDPoP bool) {
		r := httptest.NewRequest(http.MethodPost, "https://h/mcp", strings.NewReader("{}"))
		r.URL.RawQuery = query
		if header != "" {
			r.Header["Authorization"] = []string{header}
		}
		c, err := extractCredential(r, 8192, withDPoP)
		if err != nil {
			if classOf(err) == nil {
				t.Fatalf("unclassified %v", err)
			}
			return
		}
		if !isB64Token(c.token) || (c.scheme != schemeBearer && (!withDPoP || c.scheme != schemeDPoP)) {
			t.Fatalf("bad credential %+v from %q", c, header)
		}
		// The shape recorded by the one scan is the token's.
		if (c.shape == shapeJWS) != jwtverify.LooksLikeJWS(c.token) || c.shape == shapeUnknown {
			t.Fatalf("shape %d recorded for %q", c.shape, header)
		}
	})
}

func TestB64TokenSet(t *testing.T) {
	t.Parallel()
	for c := 0; c < 256; c++ {
		b := byte(c)
		want := b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || strings.IndexByte("-._~+/", b) >= 0
		if got := isB64Token(string([]byte{b})); got != want {
			t.Errorf("byte %#x: %v", c, got)
		}
	}
}
