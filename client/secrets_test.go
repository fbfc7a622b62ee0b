package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestNoSecretsInErrorsOrLogs: no access token, refresh token, code, PKCE
// verifier or client secret appears in an error message or a log record
// (logging at debug level), even when the server echoes them back.
func TestNoSecretsInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	preClient := func(issuer string) []PreRegisteredClient {
		return []PreRegisteredClient{{Issuer: issuer, ClientID: "pre", ClientSecret: "pre-registered-SECRET-value"}}
	}
	asPre := oauthtest.ASOptions{NoRegistration: true, AuthMethods: []string{"client_secret_post"}, IssueRefreshTokens: true, ExpiresIn: 60,
		PreRegistered: []oauthtest.RegisteredClient{{ID: "pre", Secret: "pre-registered-SECRET-value", Method: "client_secret_post"}}}

	t.Run("success with refresh, debug logging", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, asPre, oauthtest.ResourceOptions{}, nil)
		e.c.cfg.PreRegistered = preClient(e.as.Issuer())
		cs, err := e.session(ctx, "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		e.clock.Advance(time.Hour)
		err = callTool(ctx, cs, "echo")
		if err != nil {
			t.Fatal(err)
		}
		e.noLeak(err)
		if !strings.Contains(e.logs.String(), "token refreshed") {
			t.Error("expected a refresh to be logged")
		}
	})
	t.Run("code exchange refused, server echoes the credentials", func(t *testing.T) {
		t.Parallel()
		opts := asPre
		opts.EchoSecrets = true
		e := newEnv(t, opts, oauthtest.ResourceOptions{}, nil)
		e.c.cfg.PreRegistered = preClient(e.as.Issuer())
		err := e.c.Login(ctx, e.rs.MCPURL())
		if !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}) {
			t.Fatalf("err = %v", err)
		}
		e.noLeak(err)
	})
	t.Run("refresh refused, server echoes the refresh token", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, asPre, oauthtest.ResourceOptions{}, nil)
		e.c.cfg.PreRegistered = preClient(e.as.Issuer())
		if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		e.as.Update(func(o *oauthtest.ASOptions) { o.EchoSecrets = true })
		e.clock.Advance(time.Hour)
		st, _ := e.c.tokenState(ctx, e.rs.MCPURL())
		_, err := e.c.refresh(ctx, st, false)
		if err == nil {
			t.Fatal("refresh succeeded")
		}
		e.noLeak(err)
	})
	t.Run("failures across the flow", func(t *testing.T) {
		t.Parallel()
		var errs []error
		for _, opts := range []oauthtest.ASOptions{
			{ISS: oauthtest.ISSWrong, AuthorizeError: "access_denied"},
			{TokenType: "DPoP"},
			{PadTokenResponse: 2 << 20},
			{AuthorizeError: "invalid_scope"},
		} {
			e := newEnv(t, opts, oauthtest.ResourceOptions{}, nil)
			err := e.c.Login(ctx, e.rs.MCPURL())
			if err == nil {
				t.Fatalf("%+v: no error", opts)
			}
			errs = append(errs, err)
			e.noLeak(errs...)
		}
	})
}

// TestSanitizeErrorControlBytes: a credential the server echoes with
// control bytes or non-ASCII inside is still redacted, not reassembled by
// the removal of those bytes; fields are cut to 200 printable bytes.
func TestSanitizeErrorControlBytes(t *testing.T) {
	t.Parallel()
	const secret = "SENT-SECRET"
	tests := []struct {
		name, desc, want string
	}{
		{"plain echo", "bad " + secret, "bad [redacted]"},
		{"NUL inside", "bad SENT\x00-SECRET", "bad [redacted]"},
		{"newline and DEL inside", "SE\nNT-SEC\x7fRET!", "[redacted]!"},
		{"non-ASCII inside", "SENT-S\u00e9ECRET", "[redacted]"},
		{"long", strings.Repeat("a", 300), strings.Repeat("a", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sanitizeError(&oauthmeta.Error{Code: "invalid_client", Description: tt.desc, URI: "https://as/" + secret}, secret)
			if got.Description != tt.want {
				t.Errorf("Description = %q, want %q", got.Description, tt.want)
			}
			if got.URI != "https://as/[redacted]" || got.Code != "invalid_client" {
				t.Errorf("Code, URI = %q, %q", got.Code, got.URI)
			}
		})
	}
}
