package tokenclient_test

import (
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/internal/tokenclient"
)

// FuzzDecodeToken: a token response body either decodes to a response
// with an access token and a non-negative lifetime or fails with
// ErrResponse or a *StatusError; nothing panics.
func FuzzDecodeToken(f *testing.F) {
	for _, s := range []string{`{"access_token":"a","token_type":"Bearer","expires_in":"60"}`, `{"error":"invalid_grant"}`,
		`{"access_token":"a","expires_in":1e400}`, "access_token=a&expires_in=x", `[]`} {
		f.Add("application/json", []byte(s))
		f.Add("application/x-www-form-urlencoded", []byte(s))
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		r, err := tokenclient.DecodeToken(contentType, body)
		var se *tokenclient.StatusError
		switch {
		case err == nil:
			if r.AccessToken == "" || r.ExpiresIn < 0 {
				t.Fatalf("decoded %+v", r)
			}
		case !errors.Is(err, tokenclient.ErrResponse) && !errors.As(err, &se):
			t.Fatalf("error outside the documented kinds: %v", err)
		}
	})
}
