package tokenclient_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/tokenclient"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

func TestToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        oauthmeta.TokenResponse
		wantErr     error
		wantCode    oauthmeta.ErrorCode
	}{
		{name: "expires_in number", status: 200, body: `{"access_token":"a","token_type":"Bearer","expires_in":3600,"scope":"x y"}`,
			want: oauthmeta.TokenResponse{AccessToken: "a", TokenType: "Bearer", ExpiresIn: 3600, Scope: "x y"}},
		{name: "expires_in string", status: 200, body: `{"access_token":"a","token_type":"Bearer","expires_in":"60"}`,
			want: oauthmeta.TokenResponse{AccessToken: "a", TokenType: "Bearer", ExpiresIn: 60}},
		{name: "RFC 8693 issued_token_type", status: 200, body: `{"access_token":"a","token_type":"N_A","issued_token_type":"` + oauthmeta.TokenTypeAccessToken + `"}`,
			want: oauthmeta.TokenResponse{AccessToken: "a", TokenType: "N_A", IssuedTokenType: oauthmeta.TokenTypeAccessToken}},
		{name: "form-encoded answer", status: 200, contentType: "application/x-www-form-urlencoded", body: "access_token=a&token_type=bearer&expires_in=5",
			want: oauthmeta.TokenResponse{AccessToken: "a", TokenType: "bearer", ExpiresIn: 5}},
		{name: "form-encoded error", status: 200, contentType: "application/x-www-form-urlencoded", body: "error=bad_verification_code",
			wantCode: "bad_verification_code"},
		{name: "negative expires_in", status: 200, body: `{"access_token":"a","token_type":"Bearer","expires_in":-1}`, wantErr: tokenclient.ErrResponse},
		{name: "fractional expires_in", status: 200, body: `{"access_token":"a","token_type":"Bearer","expires_in":1.5}`, wantErr: tokenclient.ErrResponse},
		{name: "no access_token", status: 200, body: `{"token_type":"Bearer"}`, wantErr: tokenclient.ErrResponse},
		{name: "duplicate member", status: 200, body: `{"access_token":"a","access_token":"b","token_type":"Bearer"}`, wantErr: tokenclient.ErrResponse},
		{name: "case variant member", status: 200, body: `{"ACCESS_TOKEN":"a","token_type":"Bearer"}`, wantErr: tokenclient.ErrResponse},
		{name: "too large", status: 200, body: `{"access_token":"` + strings.Repeat("a", tokenclient.DefaultMaxBytes) + `"}`, wantErr: tokenclient.ErrResponse},
		{name: "RFC 6749 §5.2 error", status: 400, body: `{"error":"invalid_grant","error_description":"no"}`, wantCode: oauthmeta.CodeInvalidGrant},
		{name: "error with 200", status: 200, body: `{"error":"invalid_grant"}`, wantCode: oauthmeta.CodeInvalidGrant},
		{name: "temporarily_unavailable", status: 400, body: `{"error":"temporarily_unavailable"}`, wantErr: tokenclient.ErrUnavailable},
		{name: "503 without a body", status: 503, wantErr: tokenclient.ErrUnavailable},
		{name: "500 without an error body", status: 500, body: "oops", wantErr: &oauthmeta.Error{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", cmpOr(tt.contentType, "application/json"))
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			c := tokenclient.New(tokenclient.Config{Endpoint: srv.URL, ClientID: "c", ClientSecret: "s"})
			got, err := c.Token(context.Background(), url.Values{"grant_type": {"client_credentials"}})
			var se *tokenclient.StatusError
			switch {
			case tt.wantCode != "":
				if !errors.As(err, &se) || se.OAuth == nil || se.OAuth.Code != tt.wantCode ||
					!errors.Is(err, &oauthmeta.Error{Code: tt.wantCode}) {
					t.Fatalf("err = %v, want OAuth error %s", err, tt.wantCode)
				}
			case tt.wantErr == nil:
				if err != nil || *got != tt.want {
					t.Fatalf("Token = %+v, %v; want %+v", got, err, tt.want)
				}
			case errors.Is(tt.wantErr, &oauthmeta.Error{}):
				if !errors.As(err, &se) || se.OAuth != nil || se.StatusCode != tt.status || errors.Is(err, tokenclient.ErrUnavailable) {
					t.Fatalf("err = %v, want a status error without an OAuth error", err)
				}
			default:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestPostRequest: the form, the client authentication of each style, and
// no redirect followed.
func TestPostRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		style      tokenclient.AuthStyle
		id, secret string
		wantAuth   string
		wantForm   url.Values
	}{
		{name: "client_secret_basic form-encodes the credentials", style: tokenclient.AuthHeader, id: "a b", secret: "p:w%",
			wantAuth: "Basic " + base64.StdEncoding.EncodeToString([]byte("a+b:p%3Aw%25")), wantForm: url.Values{"k": {"v"}}},
		{name: "client_secret_post", style: tokenclient.AuthParams, id: "a", secret: "s",
			wantForm: url.Values{"k": {"v"}, "client_id": {"a"}, "client_secret": {"s"}}},
		{name: "no credentials", wantForm: url.Values{"k": {"v"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var gotAuth, gotType string
			var gotForm url.Values
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotAuth, gotType = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
				_ = r.ParseForm()
				gotForm = r.PostForm
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{}`))
			}))
			t.Cleanup(srv.Close)
			form := url.Values{"k": {"v"}}
			c := tokenclient.New(tokenclient.Config{Endpoint: srv.URL, ClientID: tt.id, ClientSecret: tt.secret, AuthStyle: tt.style})
			if _, err := c.Post(context.Background(), form); err != nil {
				t.Fatal(err)
			}
			if gotAuth != tt.wantAuth || gotType != "application/x-www-form-urlencoded" || gotForm.Encode() != tt.wantForm.Encode() {
				t.Fatalf("sent Authorization %q, Content-Type %q, form %v; want %q, form %v", gotAuth, gotType, gotForm, tt.wantAuth, tt.wantForm)
			}
			if len(form) != 1 {
				t.Fatalf("Post modified the caller's form: %v", form)
			}
		})
	}
}

func TestPostNoRedirect(t *testing.T) {
	t.Parallel()
	followed := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed = true
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	c := tokenclient.New(tokenclient.Config{Endpoint: srv.URL, HTTPClient: srv.Client()})
	_, err := c.Post(context.Background(), url.Values{})
	var se *tokenclient.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusTemporaryRedirect || followed {
		t.Fatalf("err = %v, followed %v; want the 307 itself", err, followed)
	}
}

func TestPostUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL + "/token?secret-looking=1"
	srv.Close()
	_, err := tokenclient.New(tokenclient.Config{Endpoint: endpoint}).Post(context.Background(), url.Values{"subject_token": {"SUBJECT-TOKEN-VALUE"}})
	if !errors.Is(err, tokenclient.ErrUnavailable) || strings.Contains(err.Error(), "SUBJECT-TOKEN-VALUE") {
		t.Fatalf("err = %v, want ErrUnavailable without the form", err)
	}
}
