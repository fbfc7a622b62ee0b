package attack

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/gofrs/flock"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/client/tokenstore"
)

// storeWithEntries is a file store holding two tokens and a registration.
func storeWithEntries(t *testing.T) (*tokenstore.File, []tokenstore.Key) {
	t.Helper()
	f, err := tokenstore.NewFile(filepath.Join(t.TempDir(), "mcpauth", "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys := []tokenstore.Key{
		{Issuer: "https://as.example.com", Resource: mcpResource, ClientID: "a"},
		{Issuer: "https://as.example.com", Resource: "https://other.example.com/mcp", ClientID: "a"},
	}
	for i, k := range keys {
		tok := &tokenstore.Token{Token: oauth2.Token{AccessToken: "at-secret-" + strings.Repeat("x", 20) + string(rune('a'+i)), TokenType: "Bearer", RefreshToken: "rt-secret-" + strings.Repeat("y", 20) + string(rune('a'+i))}}
		if err := f.PutToken(ctx, k, tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.PutRegistration(ctx, &tokenstore.Registration{Issuer: "https://as.example.com", Method: tokenstore.MethodDynamic,
		ClientID: "a", ClientSecret: "cs-secret-0123456789"}); err != nil {
		t.Fatal(err)
	}
	return f, keys
}

// TestTokenStoreCorrupted: the store file is damaged (a crash of another
// program, a bad manual edit). Every read and write reports ErrCorrupt
// without echoing the file's content, no write replaces the damaged file
// (so what is left in it can still be recovered), and the client reports the
// same error instead of starting a login that would overwrite it.
func TestTokenStoreCorrupted(t *testing.T) {
	t.Parallel()
	f, keys := storeWithEntries(t)
	ctx := context.Background()
	data, err := os.ReadFile(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	damaged := data[:len(data)/2]
	if err := os.WriteFile(f.Path(), damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	sec := &secrets{}
	sec.Add("at-secret-"+strings.Repeat("x", 20)+"a", "rt-secret-"+strings.Repeat("y", 20)+"a", "cs-secret-0123456789")
	if _, err := f.Token(ctx, keys[0]); !errors.Is(err, tokenstore.ErrCorrupt) {
		t.Errorf("Token: %v; want ErrCorrupt", err)
	} else {
		sec.SeenErr(err)
	}
	err = f.PutToken(ctx, tokenstore.Key{Issuer: "https://as.example.com", Resource: "https://third.example.com/mcp", ClientID: "a"},
		&tokenstore.Token{Token: oauth2.Token{AccessToken: "new-token-0123456789", TokenType: "Bearer"}})
	if !errors.Is(err, tokenstore.ErrCorrupt) {
		t.Errorf("PutToken: %v; want ErrCorrupt", err)
	}
	if after, _ := os.ReadFile(f.Path()); string(after) != string(damaged) {
		t.Error("a write replaced the damaged file: the entries in it are lost")
	}

	n := newVNet(t)
	logs := &logSink{}
	sec.Watch(logs)
	as := startAS(t, n, "as.example.com", sec, logs, asOptions{})
	honestMCP(t, n, as.Issuer, nil, nil)
	e := newClientEnv(t, n, sec, func(c *client.Config) { c.Store = f })
	if _, err := e.call(ctx); !errors.Is(err, tokenstore.ErrCorrupt) {
		t.Errorf("client: %v; want an error matching tokenstore.ErrCorrupt", err)
	}
	if e.auth.n.Load() != 0 || as.Hits("/token") != 0 {
		t.Error("the client started a login over a damaged store")
	}
	if after, _ := os.ReadFile(f.Path()); string(after) != string(damaged) {
		t.Error("the client replaced the damaged file")
	}
	sec.Check(t)
}

// TestTokenStoreLocked: another process holds the store's lock (flock) and
// does not let go. Reads go on (they need no lock); a write waits until its
// context ends and reports that, changing nothing; once the lock is
// released the write succeeds and every earlier entry is still there.
// Concurrent writers through two File values on one path lose no update.
func TestTokenStoreLocked(t *testing.T) {
	t.Parallel()
	f, keys := storeWithEntries(t)
	lock := flock.New(f.Path() + ".lock")
	if err := lock.Lock(); err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	for _, k := range keys {
		if _, err := f.Token(context.Background(), k); err != nil {
			t.Errorf("read while another process holds the lock: %v", err)
		}
	}
	third := tokenstore.Key{Issuer: "https://as.example.com", Resource: "https://third.example.com/mcp", ClientID: "a"}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := f.PutToken(ctx, third, &tokenstore.Token{Token: oauth2.Token{AccessToken: "third-token-0123456789", TokenType: "Bearer"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("PutToken under a held lock: %v; want the context's deadline", err)
	}
	if _, err := f.Token(context.Background(), third); !errors.Is(err, tokenstore.ErrNotFound) {
		t.Errorf("the refused write took effect: %v", err)
	}
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}

	other, err := tokenstore.NewFile(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var written []tokenstore.Key
	for i := range 20 {
		k := tokenstore.Key{Issuer: "https://as.example.com", Resource: mcpResource, ClientID: "w" + string(rune('a'+i))}
		written = append(written, k)
		s := f
		if i%2 == 1 {
			s = other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.PutToken(context.Background(), k, &tokenstore.Token{Token: oauth2.Token{AccessToken: "tok-0123456789", TokenType: "Bearer"}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, k := range append(append(keys, third), written...) {
		if k == third {
			if err := f.PutToken(context.Background(), k, &tokenstore.Token{Token: oauth2.Token{AccessToken: "third-token-0123456789", TokenType: "Bearer"}}); err != nil {
				t.Fatalf("write after release: %v", err)
			}
		}
		if _, err := other.Token(context.Background(), k); err != nil {
			t.Errorf("entry %v lost: %v", k, err)
		}
	}
	if _, err := other.Registration(context.Background(), "https://as.example.com"); err != nil {
		t.Errorf("registration lost: %v", err)
	}
}
