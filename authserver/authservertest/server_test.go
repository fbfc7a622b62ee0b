package authservertest_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
)

// TestStart: the one-call test server, with an issuer path, and its
// refusals.
func TestStart(t *testing.T) {
	t.Parallel()
	ts, err := authservertest.Start(authserver.Config{Issuer: "/tenant1", Consent: authserver.ConsentAuto})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if !strings.HasPrefix(ts.Issuer(), "http://127.0.0.1:") || ts.Issuer() != ts.URL+"/tenant1" {
		t.Fatalf("issuer %q, URL %q", ts.Issuer(), ts.URL)
	}
	if _, err := authservertest.Start(authserver.Config{SigningAlgorithm: "none"}); !errors.Is(err, authserver.ErrConfig) {
		t.Fatalf("bad config: %v", err)
	}
	if _, err := authservertest.Start(authserver.Config{}, "chaos"); err == nil || !strings.Contains(err.Error(), "unknown fault") {
		t.Fatalf("bad fault: %v", err)
	}
}

// TestNewServer: the server lives as long as the test, and a non-path
// issuer is replaced by the listener's origin.
func TestNewServer(t *testing.T) {
	t.Parallel()
	var ts *authservertest.Server
	t.Run("server", func(t *testing.T) {
		ts = authservertest.NewServer(t, authserver.Config{Issuer: "https://as.example.com"})
		if ts.Issuer() != ts.URL {
			t.Fatalf("issuer %q, URL %q", ts.Issuer(), ts.URL)
		}
		resp, err := ts.Client().Get(ts.URL + "/.well-known/oauth-authorization-server")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("metadata: %d", resp.StatusCode)
		}
	})
	if _, err := http.Get(ts.URL + "/.well-known/oauth-authorization-server"); err == nil {
		t.Fatal("the server still answers after its test ended")
	}
}
