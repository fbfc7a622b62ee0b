package tokenstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// fakeRing is a credential store in memory that refuses secrets over the
// Windows Credential Manager's 2560 bytes, and counts its reads.
type fakeRing struct {
	mu      sync.Mutex
	secrets map[string]string
	gets    int
	fail    error
}

func newFakeRing() *fakeRing { return &fakeRing{secrets: map[string]string{}} }

func (r *fakeRing) Get(service, user string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gets++
	if r.fail != nil {
		return "", r.fail
	}
	s, ok := r.secrets[service+"\x00"+user]
	if !ok {
		return "", ErrNotFound
	}
	return s, nil
}

func (r *fakeRing) Set(service, user, secret string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(secret) > 2560 {
		return errors.New("fakeRing: secret too large")
	}
	r.secrets[service+"\x00"+user] = secret
	return nil
}

func (r *fakeRing) Delete(service, user string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.secrets, service+"\x00"+user)
	return nil
}

// names lists the secrets' user names.
func (r *fakeRing) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.secrets {
		_, u, _ := strings.Cut(k, "\x00")
		out = append(out, u)
	}
	return out
}

func newKeychainStore(t *testing.T, ring Keyring, dir string) *Keychain {
	t.Helper()
	k, err := NewKeychain(KeychainConfig{Dir: dir, Keyring: ring})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// bigDiscovery is a discovery record of some kilobytes, like a real
// authorization server's metadata.
func bigDiscovery(i int) *Discovery {
	d := &Discovery{Resource: fmt.Sprintf("https://h%d/mcp", i), Issuer: "https://as", Expires: epoch}
	for j := range 100 {
		d.ScopesSupported = append(d.ScopesSupported, fmt.Sprintf("scope-%d-%d-%x", i, j, j*7919))
	}
	return d
}

// TestKeychainSplitsLargeDocuments: a document far over one secret's
// limit is split, read back whole, and the previous generation's secrets
// are deleted.
func TestKeychainSplitsLargeDocuments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ring := newFakeRing()
	k := newKeychainStore(t, ring, t.TempDir())
	for i := range 40 {
		if err := k.PutDiscovery(ctx, bigDiscovery(i)); err != nil {
			t.Fatal(err)
		}
	}
	tok := &Token{Token: oauth2.Token{AccessToken: "at", RefreshToken: "rt"}}
	key := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: "c"}
	if err := k.PutToken(ctx, key, tok); err != nil {
		t.Fatal(err)
	}
	names := ring.names()
	chunks := 0
	for _, n := range names {
		if strings.HasPrefix(n, "data.") {
			chunks++
			if !strings.HasPrefix(n, "data.41.") {
				t.Fatalf("a previous generation's secret is left: %s", n)
			}
		}
	}
	if chunks < 2 {
		t.Fatalf("%d secrets: the document was not split", chunks)
	}
	other := newKeychainStore(t, ring, t.TempDir()) // another process, without the cache
	for i := range 40 {
		d, err := other.Discovery(ctx, bigDiscovery(i).Resource)
		if err != nil || len(d.ScopesSupported) != 100 {
			t.Fatalf("discovery %d: %v", i, err)
		}
	}
	if got, err := other.Token(ctx, key); err != nil || got.RefreshToken != "rt" {
		t.Fatalf("token: %v %v", got, err)
	}
}

// TestKeychainCache: reads cost no round trip while nothing changed, and
// see another process's update at once.
func TestKeychainCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ring, dir := newFakeRing(), t.TempDir()
	a, b := newKeychainStore(t, ring, dir), newKeychainStore(t, ring, dir)
	key := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: "c"}
	if err := a.PutToken(ctx, key, &Token{Token: oauth2.Token{AccessToken: "one"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Token(ctx, key); err != nil {
		t.Fatal(err)
	}
	ring.mu.Lock()
	before := ring.gets
	ring.mu.Unlock()
	for range 10 {
		if _, err := b.Token(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	ring.mu.Lock()
	after := ring.gets
	ring.mu.Unlock()
	if after != before {
		t.Fatalf("%d credential store reads for cached lookups", after-before)
	}
	time.Sleep(10 * time.Millisecond) // a distinct modification time on coarse clocks
	if err := a.PutToken(ctx, key, &Token{Token: oauth2.Token{AccessToken: "two"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Token(ctx, key); err != nil || got.AccessToken != "two" {
		t.Fatalf("after another writer: %v %v", got, err)
	}
}

// TestKeychainConcurrentWriters: stores sharing the credential store and
// the lock directory lose no update.
func TestKeychainConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ring, dir := newFakeRing(), t.TempDir()
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k := newKeychainStore(t, ring, dir)
			key := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: strconv.Itoa(i)}
			if err := k.PutToken(ctx, key, &Token{Token: oauth2.Token{AccessToken: "a"}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	k := newKeychainStore(t, ring, dir)
	for i := range n {
		if _, err := k.Token(ctx, Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: strconv.Itoa(i)}); err != nil {
			t.Errorf("entry %d lost: %v", i, err)
		}
	}
}

// TestKeychainLock: the per-key lock excludes a second holder.
func TestKeychainLock(t *testing.T) {
	t.Parallel()
	ring, dir := newFakeRing(), t.TempDir()
	a, b := newKeychainStore(t, ring, dir), newKeychainStore(t, ring, dir)
	k := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: "c"}
	unlock, err := a.Lock(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(ctx, k); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held: %v", err)
	}
	unlock()
	u, err := b.Lock(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	u()
}

// TestKeychainRefusals: a damaged document, an unavailable credential
// store and a missing directory are errors, never an empty store.
func TestKeychainRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: "c"}
	ring := newFakeRing()
	k := newKeychainStore(t, ring, t.TempDir())
	if err := k.PutToken(ctx, key, &Token{Token: oauth2.Token{AccessToken: "a"}}); err != nil {
		t.Fatal(err)
	}
	ring.mu.Lock()
	for name := range ring.secrets {
		if strings.Contains(name, "\x00data.") {
			ring.secrets[name] = "AAAA" + ring.secrets[name][4:]
		}
	}
	ring.mu.Unlock()
	if _, err := newKeychainStore(t, ring, t.TempDir()).Token(ctx, key); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged secret: %v", err)
	}
	ring.Set(DefaultKeychainService, "index", `{"v":1,"gen":1,"n":100000000,"sha256":"x"}`)
	if _, err := newKeychainStore(t, ring, t.TempDir()).Token(ctx, key); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("absurd index: %v", err)
	}
	down := newFakeRing()
	down.fail = errors.New("org.freedesktop.DBus.Error.ServiceUnknown")
	dk := newKeychainStore(t, down, t.TempDir())
	if err := dk.Available(ctx); err == nil {
		t.Fatal("an unavailable credential store reported available")
	}
	if _, err := dk.Token(ctx, key); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("unavailable store read as empty: %v", err)
	}
	if _, err := NewKeychain(KeychainConfig{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no Dir: %v", err)
	}
}

// TestKeychainSecretService runs the store against the real Secret
// Service of the session (GNOME Keyring under dbus-run-session, as
// `make test` starts it through mk/keyring.mk).
func TestKeychainSecretService(t *testing.T) {
	if os.Getenv("MCPAUTH_TEST_SECRET_SERVICE") != "1" {
		if _, err := exec.LookPath("gnome-keyring-daemon"); err != nil {
			t.Skip("no Secret Service: install gnome-keyring and dbus, and run `make test-keyring` (mk/keyring.mk) to test the keychain store against one")
		}
		t.Skip("set MCPAUTH_TEST_SECRET_SERVICE=1 inside a D-Bus session with an unlocked keyring (`make test-keyring` does) to test the keychain store against it")
	}
	ctx := context.Background()
	service := "mcpauth-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	k, err := NewKeychain(KeychainConfig{Service: service, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Available(ctx); err != nil {
		t.Fatalf("Secret Service unavailable: %v", err)
	}
	for i := range 10 {
		if err := k.PutDiscovery(ctx, bigDiscovery(i)); err != nil {
			t.Fatal(err)
		}
	}
	key := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: "c"}
	if err := k.PutToken(ctx, key, &Token{Token: oauth2.Token{AccessToken: "at", RefreshToken: "rt"}}); err != nil {
		t.Fatal(err)
	}
	other, _ := NewKeychain(KeychainConfig{Service: service, Dir: t.TempDir()})
	if got, err := other.Token(ctx, key); err != nil || got.RefreshToken != "rt" {
		t.Fatalf("read back: %v %v", got, err)
	}
	if d, err := other.Discovery(ctx, bigDiscovery(9).Resource); err != nil || len(d.ScopesSupported) != 100 {
		t.Fatalf("discovery: %v", err)
	}
	t.Cleanup(func() {
		ring := OSKeyring()
		_, index, err := k.read()
		if err == nil {
			for i := range index.Chunks {
				_ = ring.Delete(service, chunkName(index.Generation, i))
			}
		}
		_ = ring.Delete(service, "index")
	})
}

// FuzzDecodeKeychain: joined secrets read from the credential store are a
// document or ErrCorrupt, whatever they hold; never a panic.
func FuzzDecodeKeychain(f *testing.F) {
	text, sum, _ := encodeKeychain(&fileDoc{Version: fileVersion})
	f.Add([]byte(text), sum)
	f.Add([]byte("AAAA"), "x")
	f.Fuzz(func(t *testing.T, joined []byte, sum string) {
		d, err := decodeKeychain(joined, sum)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error outside ErrCorrupt: %v", err)
		}
		if err == nil && d == nil {
			t.Fatal("no document and no error")
		}
	})
}
