package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestObserveReadsFormOnce: the narration sees a form-encoded body, the
// handler still reads all of it, and the request given to observe keeps
// its own body; another body is neither read nor parsed.
func TestObserveReadsFormOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ctype, body string
		want              url.Values
	}{
		{"form", "application/x-www-form-urlencoded; charset=UTF-8", "grant_type=authorization_code&code=c1", url.Values{"grant_type": {"authorization_code"}, "code": {"c1"}}},
		{"json", "application/json", `{"grant_type":"x"}`, nil},
		{"form over 64 KiB", "application/x-www-form-urlencoded", "a=" + strings.Repeat("x", 64<<10), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var seen url.Values
			var handlerBody string
			h := observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				handlerBody = string(b)
			}), func(_ *http.Request, form url.Values) { seen = form }, func(*http.Request, int, http.Header) {})
			r := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.ctype)
			given := r.Body
			h.ServeHTTP(httptest.NewRecorder(), r)
			if seen.Encode() != tc.want.Encode() {
				t.Errorf("narration saw %v, want %v", seen, tc.want)
			}
			if handlerBody != tc.body {
				t.Errorf("handler read %d bytes, want %d", len(handlerBody), len(tc.body))
			}
			if r.Body != given {
				t.Error("the request given to observe had its body replaced")
			}
		})
	}
}
