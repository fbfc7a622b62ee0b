package httpform

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestPostForm: the body is read within its limit and parsed without
// setting any field of the request; another content type gives an empty
// form; a form a handler in front parsed already is the one returned.
func TestPostForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ctype, body string
		preparsed         bool
		limit             int64
		want              url.Values
		wantTooLarge      bool
		wantErr           bool
	}{
		{name: "form", ctype: "application/x-www-form-urlencoded", body: "a=1&b=2&b=3", limit: 64,
			want: url.Values{"a": {"1"}, "b": {"2", "3"}}},
		{name: "form with charset", ctype: "application/x-www-form-urlencoded; charset=utf-8", body: "a=1", limit: 64,
			want: url.Values{"a": {"1"}}},
		{name: "over the limit", ctype: "application/x-www-form-urlencoded", body: "a=" + strings.Repeat("x", 64), limit: 64,
			wantTooLarge: true},
		{name: "malformed", ctype: "application/x-www-form-urlencoded", body: "a=%zz", limit: 64, wantErr: true},
		{name: "another type", ctype: "application/json", body: `{"a":"1"}`, limit: 64, want: url.Values{}},
		{name: "no type", body: "a=1", limit: 64, want: url.Values{}},
		{name: "parsed in front", ctype: "application/x-www-form-urlencoded", body: "a=1", limit: 64, preparsed: true,
			want: url.Values{"a": {"1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/x?q=1", strings.NewReader(tc.body))
			if tc.ctype != "" {
				r.Header.Set("Content-Type", tc.ctype)
			}
			if tc.preparsed {
				if err := r.ParseForm(); err != nil {
					t.Fatal(err)
				}
			}
			body := r.Body
			got, err := Post(httptest.NewRecorder(), r, tc.limit)
			var mbe *http.MaxBytesError
			switch {
			case tc.wantTooLarge:
				if !errors.As(err, &mbe) {
					t.Fatalf("err = %v, want *http.MaxBytesError", err)
				}
			case tc.wantErr:
				if err == nil {
					t.Fatalf("form %v, want an error", got)
				}
			case err != nil:
				t.Fatal(err)
			case got.Encode() != tc.want.Encode():
				t.Fatalf("form %v, want %v", got, tc.want)
			}
			if !tc.preparsed && (r.Form != nil || r.PostForm != nil || r.Body != body) {
				t.Errorf("the request was changed: Form %v, PostForm %v, Body replaced %v", r.Form, r.PostForm, r.Body != body)
			}
		})
	}
}
