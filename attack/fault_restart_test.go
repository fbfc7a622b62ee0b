package attack

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/boltstore"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestAuthServerRestartWithDataDir: the authorization server is killed and
// started again on the same data directory (bbolt). The client's
// registration, grant and refresh token survive, and so do the signing keys:
// after the restart the client refreshes its expired token without a new
// login or registration, the resource server accepts the token the new
// process issued, and the published key set is unchanged.
func TestAuthServerRestartWithDataDir(t *testing.T) {
	t.Parallel()
	n, sec, logs := newVNet(t), &secrets{}, &logSink{}
	sec.Watch(logs)
	clock := oauthtest.NewClock(oauthtest.Epoch())
	path := filepath.Join(t.TempDir(), "authserver.db")
	var store *boltstore.Store
	start := func() *asHandle {
		opened, err := boltstore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = opened.Close() })
		store = opened
		st := opened.Storage()
		return startAS(t, n, "as.example.com", sec, logs, asOptions{cfg: func(c *authserver.Config) {
			c.Storage = st
			c.Now = clock.Now
			c.AccessTokenTTL = 10 * time.Minute
			c.RateLimit = authserver.RateLimit{PerIP: math.Inf(1), PerClient: math.Inf(1), PerIPBrowser: math.Inf(1)}
		}})
	}
	first := start()
	kidsBefore := publishedKids(t, n)
	honestMCPAt(t, n, first.Issuer, nil, nil, clock.Now)
	e := newClientEnv(t, n, sec, nil)
	ctx := context.Background()
	if status, err := e.call(ctx); err != nil || status != http.StatusOK {
		t.Fatalf("before the restart: %d %v", status, err)
	}

	// Kill it: connections cut, store closed, a new process on the same
	// directory.
	n.Stop("as.example.com")
	if err := errors.Join(first.AS.Close(), store.Close()); err != nil {
		t.Fatal(err)
	}
	second := start()
	if kidsAfter := publishedKids(t, n); !slices.Equal(kidsBefore, kidsAfter) {
		t.Errorf("signing keys changed across the restart: %v → %v", kidsBefore, kidsAfter)
	}

	clock.Advance(15 * time.Minute) // the access token has expired
	if status, err := e.call(ctx); err != nil || status != http.StatusOK {
		t.Fatalf("after the restart: %d %v", status, err)
	}
	if got := e.auth.n.Load(); got != 1 {
		t.Errorf("%d authorizations; the grant did not survive the restart", got)
	}
	if second.Hits("/register") != 0 || second.Hits("/token") != 1 {
		t.Errorf("after the restart: %d registrations, %d token requests; want 0 and 1 (one refresh)",
			second.Hits("/register"), second.Hits("/token"))
	}
	sec.Check(t)
}

// publishedKids fetches the issuer's JWK Set and returns its key IDs.
func publishedKids(t *testing.T, n *vnet) []string {
	t.Helper()
	resp, err := n.Client().Get("https://as.example.com/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	slices.Sort(kids)
	return kids
}
