package tokenstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

var epoch = time.Date(2026, time.August, 1, 12, 0, 0, 0, time.UTC)

func newFileStore(t *testing.T) *File {
	t.Helper()
	f, err := NewFile(filepath.Join(t.TempDir(), "sub", "store.json"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// stores runs fn against each implementation.
func stores(t *testing.T, fn func(t *testing.T, s Store)) {
	t.Helper()
	for _, tc := range []struct {
		name string
		new  func(t *testing.T) Store
	}{
		{"memory", func(*testing.T) Store { return NewMemory() }},
		{"zero memory", func(*testing.T) Store { return &Memory{} }},
		{"file", func(t *testing.T) Store { return newFileStore(t) }},
		{"keychain", func(t *testing.T) Store { return newKeychainStore(t, newFakeRing(), t.TempDir()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fn(t, tc.new(t))
		})
	}
}

// TestStoreContract covers CL-05/CL-18/CL-19 at the storage layer: entries
// are keyed by (issuer, resource, client) and by issuer, never mixed.
func TestStoreContract(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stores(t, func(t *testing.T, s Store) {
		k1 := Key{Issuer: "https://as1", Resource: "https://h/mcp", ClientID: "c1"}
		k2 := Key{Issuer: "https://as2", Resource: "https://h/mcp", ClientID: "c1"}
		if _, err := s.Token(ctx, k1); !errors.Is(err, ErrNotFound) {
			t.Fatalf("empty store: err = %v, want ErrNotFound", err)
		}
		tok := &Token{Token: oauth2.Token{AccessToken: "at-1", TokenType: "Bearer", RefreshToken: "rt-1", Expiry: epoch}, Scopes: []string{"a"}}
		if err := s.PutToken(ctx, k1, tok); err != nil {
			t.Fatal(err)
		}
		tok.Scopes[0] = "mutated"
		got, err := s.Token(ctx, k1)
		if err != nil || got.AccessToken != "at-1" || got.Scopes[0] != "a" || !got.Expiry.Equal(epoch) {
			t.Fatalf("Token = %+v, %v", got, err)
		}
		got.Scopes[0] = "mutated again"
		if again, _ := s.Token(ctx, k1); again.Scopes[0] != "a" {
			t.Fatal("store returned shared memory")
		}
		if _, err := s.Token(ctx, k2); !errors.Is(err, ErrNotFound) {
			t.Fatalf("CL-05: a token for as1 was found under as2: %v", err)
		}
		if err := s.DeleteToken(ctx, k1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Token(ctx, k1); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}

		reg := &Registration{Issuer: "https://as1", Method: MethodDynamic, ClientID: "c1", ClientSecret: "s1", RedirectURIs: []string{"http://127.0.0.1/cb"}}
		if err := s.PutRegistration(ctx, reg); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Registration(ctx, "https://as2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("CL-18: registration for as1 visible to as2: %v", err)
		}
		if r, err := s.Registration(ctx, "https://as1"); err != nil || r.ClientSecret != "s1" {
			t.Fatalf("Registration = %v, %v", r, err)
		}
		if err := s.DeleteRegistration(ctx, "https://as1"); err != nil {
			t.Fatal(err)
		}

		disc := &Discovery{Resource: "https://h/mcp", ResourceIndicator: "https://h/mcp", Issuer: "https://as1",
			AuthServer: &oauthmeta.AuthServerMetadata{Issuer: "https://as1", ScopesSupported: []string{"x"}}, Expires: epoch}
		if err := s.PutDiscovery(ctx, disc); err != nil {
			t.Fatal(err)
		}
		disc.AuthServer.ScopesSupported[0] = "mutated"
		if d, err := s.Discovery(ctx, "https://h/mcp"); err != nil || d.AuthServer.ScopesSupported[0] != "x" || !d.Expires.Equal(epoch) {
			t.Fatalf("Discovery = %+v, %v", d, err)
		}
	})
}

func TestStoreRejectsInvalidEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stores(t, func(t *testing.T, s Store) {
		for name, err := range map[string]error{
			"token without issuer":       s.PutToken(ctx, Key{Resource: "r", ClientID: "c"}, &Token{}),
			"nil token":                  s.PutToken(ctx, Key{Issuer: "i", Resource: "r", ClientID: "c"}, nil),
			"registration without id":    s.PutRegistration(ctx, &Registration{Issuer: "i"}),
			"nil registration":           s.PutRegistration(ctx, nil),
			"discovery without issuer":   s.PutDiscovery(ctx, &Discovery{Resource: "r"}),
			"discovery without resource": s.PutDiscovery(ctx, &Discovery{Issuer: "i"}),
		} {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: err = %v, want ErrInvalid", name, err)
			}
		}
	})
}

// TestRedaction: tokens and secrets never appear when formatted or logged
// (requirement CL-20: stored confidentially).
func TestRedaction(t *testing.T) {
	t.Parallel()
	tok := &Token{Token: oauth2.Token{AccessToken: "SECRET-AT", RefreshToken: "SECRET-RT", TokenType: "Bearer"}}
	reg := &Registration{Issuer: "https://as", ClientID: "cid", ClientSecret: "SECRET-CS"}
	var logged strings.Builder
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	logger.Info("x", "token", tok, "registration", reg)
	logger.Info("y", slog.Any("token", tok))
	// Values, not only pointers: a dereferenced token, a struct holding
	// one (fmt), and a JSON log handler, which marshals what is not a
	// LogValuer. (encoding/json itself shows the secrets: it is the
	// store's file format.)
	holder := struct {
		T Token
		R Registration
	}{*tok, *reg}
	var jsonLogged strings.Builder
	jlogger := slog.New(slog.NewJSONHandler(&jsonLogged, nil))
	jlogger.Info("z", "token", *tok, "registration", *reg)
	logger.Info("v", "token", *tok, "registration", *reg)
	var nilTok *Token
	var nilReg *Registration
	if got := fmt.Sprintf("%v %v", nilTok, nilReg); got != "<nil> <nil>" {
		t.Errorf("nil pointers formatted as %q, want <nil> <nil>", got)
	}
	for _, out := range []string{
		fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s", tok, tok, tok, tok),
		fmt.Sprint(reg), fmt.Sprintf("%v %+v %#v %s", reg, reg, reg, reg),
		fmt.Sprintf("%v %+v %#v %s", *tok, *tok, *tok, *tok),
		fmt.Sprintf("%v %+v %#v %s", *reg, *reg, *reg, *reg),
		fmt.Sprintf("%v %+v %#v", holder, holder, holder),
		logged.String(), jsonLogged.String(),
	} {
		for _, secret := range []string{"SECRET-AT", "SECRET-RT", "SECRET-CS"} {
			if strings.Contains(out, secret) {
				t.Errorf("output %q leaks %s", out, secret)
			}
		}
	}
}

func TestTokenValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tok  *Token
		want bool
	}{
		{"nil", nil, false},
		{"empty", &Token{}, false},
		{"no expiry", &Token{Token: oauth2.Token{AccessToken: "a"}}, true},
		{"fresh", &Token{Token: oauth2.Token{AccessToken: "a", Expiry: epoch.Add(time.Hour)}}, true},
		{"within leeway", &Token{Token: oauth2.Token{AccessToken: "a", Expiry: epoch.Add(10 * time.Second)}}, false},
		{"expired", &Token{Token: oauth2.Token{AccessToken: "a", Expiry: epoch.Add(-time.Second)}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.tok.Valid(epoch, 30*time.Second); got != tt.want {
				t.Errorf("Valid = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFilePermissions: the file store writes private files (0600, or on
// Windows an access control list for the current user alone) in a private
// directory, and refuses a store or lock file others can read (CL-20).
func TestFilePermissions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: "c"}
	for _, exposed := range []string{"", ".lock"} {
		t.Run("exposed="+exposed, func(t *testing.T) {
			t.Parallel()
			f := newFileStore(t)
			if err := f.PutToken(ctx, k, &Token{Token: oauth2.Token{AccessToken: "a", TokenType: "Bearer"}}); err != nil {
				t.Fatal(err)
			}
			unlock, err := f.Lock(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			unlock()
			entries, err := os.ReadDir(filepath.Dir(f.Path()))
			if err != nil {
				t.Fatal(err)
			}
			checkPrivatePath(t, filepath.Dir(f.Path()))
			for _, e := range entries {
				if strings.Contains(e.Name(), ".tmp-") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
				checkPrivatePath(t, filepath.Join(filepath.Dir(f.Path()), e.Name()))
			}
			if len(entries) != 3 { // store, store lock, key lock
				t.Errorf("%d files in the store directory, want 3", len(entries))
			}

			exposeToOthers(t, f.Path()+exposed)
			if exposed == "" {
				if _, err := f.Token(ctx, k); !errors.Is(err, ErrInsecureFile) {
					t.Fatalf("readable store: err = %v, want ErrInsecureFile", err)
				}
			}
			if err := f.PutToken(ctx, k, &Token{Token: oauth2.Token{AccessToken: "b"}}); !errors.Is(err, ErrInsecureFile) {
				t.Fatalf("update with a readable %q file: err = %v, want ErrInsecureFile", f.Path()+exposed, err)
			}
		})
	}
}

func TestFileCorrupt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name    string
		content string
		wantErr error
	}{
		{"not JSON", "garbage", ErrCorrupt},
		{"array", "[]", ErrCorrupt},
		{"duplicate names", `{"version":1,"version":1}`, ErrCorrupt},
		{"unknown version", `{"version":7}`, ErrCorrupt},
		{"empty file", "", nil},
		{"whitespace", " \n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFileStore(t)
			if err := os.MkdirAll(filepath.Dir(f.Path()), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.Path(), []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := f.Registration(ctx, "https://as")
			if tt.wantErr == nil {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("err = %v, want ErrNotFound", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestFileSurvivesReopen: a second File on the same path sees the data
// (a second process, or the next run).
func TestFileSurvivesReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFileStore(t)
	k := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: "c"}
	if err := f.PutToken(ctx, k, &Token{Token: oauth2.Token{AccessToken: "a", RefreshToken: "r2", Expiry: epoch}}); err != nil {
		t.Fatal(err)
	}
	g, err := NewFile(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.Token(ctx, k)
	if err != nil || got.RefreshToken != "r2" || !got.Expiry.Equal(epoch) {
		t.Fatalf("reopened: %+v, %v", got, err)
	}
}

// TestFileConcurrentGoroutines: concurrent updates from many goroutines
// (each with its own File, like separate processes) lose nothing.
func TestFileConcurrentGoroutines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.json")
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, _ := NewFile(path)
			k := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: strconv.Itoa(i)}
			if err := f.PutToken(ctx, k, &Token{Token: oauth2.Token{AccessToken: "a"}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	f, _ := NewFile(path)
	for i := range n {
		k := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: strconv.Itoa(i)}
		if _, err := f.Token(ctx, k); err != nil {
			t.Errorf("entry %d lost: %v", i, err)
		}
	}
}

// TestFileTwoProcesses runs two child processes that update the same
// store file at the same time; every update must survive.
func TestFileTwoProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.json")
	const perProcess = 30
	var cmds []*exec.Cmd
	for p := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "TOKENSTORE_HELPER=1", "TOKENSTORE_PATH="+path,
			"TOKENSTORE_PREFIX=p"+strconv.Itoa(p), "TOKENSTORE_N="+strconv.Itoa(perProcess))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper process: %v", err)
		}
	}
	f, _ := NewFile(path)
	for p := range 2 {
		for i := range perProcess {
			k := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: fmt.Sprintf("p%d-%d", p, i)}
			if _, err := f.Token(context.Background(), k); err != nil {
				t.Errorf("%v lost: %v", k, err)
			}
		}
	}
}

// TestHelperProcess is the child of TestFileTwoProcesses.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("TOKENSTORE_HELPER") != "1" {
		t.Skip("helper process only")
	}
	f, err := NewFile(os.Getenv("TOKENSTORE_PATH"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(os.Getenv("TOKENSTORE_N"))
	for i := range n {
		k := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: fmt.Sprintf("%s-%d", os.Getenv("TOKENSTORE_PREFIX"), i)}
		if err := f.PutToken(context.Background(), k, &Token{Token: oauth2.Token{AccessToken: "a"}}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFileLock: the per-key lock excludes a second holder until released,
// and a waiter gives up when its context ends.
func TestFileLock(t *testing.T) {
	t.Parallel()
	f := newFileStore(t)
	k := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: "c"}
	unlock, err := f.Lock(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := NewFile(f.Path())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.Lock(ctx, k); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held: err = %v, want deadline exceeded", err)
	}
	other := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: "other"}
	u2, err := g.Lock(context.Background(), other)
	if err != nil {
		t.Fatalf("a different key must not be blocked: %v", err)
	}
	u2()
	unlock()
	unlock() // idempotent
	u3, err := g.Lock(context.Background(), k)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	u3()
}

func TestNewFileEmptyPath(t *testing.T) {
	t.Parallel()
	if _, err := NewFile(""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

// TestFileCacheSeesOtherWriters: the parsed-document cache never hides a
// write made through another File (another process), and reads racing
// with writes on one File are safe.
func TestFileCacheSeesOtherWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newFileStore(t)
	b, _ := NewFile(a.Path())
	k := Key{Issuer: "https://as", Resource: "https://h/mcp", ClientID: "c"}
	for i := range 20 {
		want := "at-" + strconv.Itoa(i)
		writer := a
		if i%2 == 1 {
			writer = b
		}
		if err := writer.PutToken(ctx, k, &Token{Token: oauth2.Token{AccessToken: want}}); err != nil {
			t.Fatal(err)
		}
		for _, reader := range []*File{a, b} {
			got, err := reader.Token(ctx, k)
			if err != nil || got.AccessToken != want {
				t.Fatalf("round %d: read %v, %v; want %s", i, got, err, want)
			}
		}
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				_ = a.PutToken(ctx, Key{Issuer: "https://as", Resource: "r", ClientID: strconv.Itoa(i)}, &Token{Token: oauth2.Token{AccessToken: "x"}})
				return
			}
			for range 20 {
				if _, err := a.Token(ctx, k); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

// TestFileLoadsEarlierFormat: a store written before Token embedded
// oauth2.Token (testdata/store-v1.json) still loads, field for field, and
// survives being rewritten by an update.
func TestFileLoadsEarlierFormat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("testdata", "store-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFileStore(t)
	if err := os.MkdirAll(filepath.Dir(f.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Path(), data, 0o600); err != nil {
		t.Fatal(err)
	}
	k1 := Key{Issuer: "https://as.example.com", Resource: "https://mcp.example.com/mcp", ClientID: "c1"}
	k2 := Key{Issuer: "https://as.example.com", Resource: "https://mcp.example.com/other", ClientID: "c1"}
	want1 := &Token{
		Token:   oauth2.Token{AccessToken: "at-1", TokenType: "DPoP", RefreshToken: "rt-1", Expiry: epoch},
		DPoPJKT: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I", Scopes: []string{"read", "write"},
		RequestedScopes: []string{"read"}, RefreshedAfterRejection: true,
	}
	want2 := &Token{Token: oauth2.Token{AccessToken: "at-2", TokenType: "Bearer"}}
	check := func(when string) {
		t.Helper()
		for k, want := range map[Key]*Token{k1: want1, k2: want2} {
			got, err := f.Token(ctx, k)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if fmt.Sprintf("%#v %q %q %v", got.Token, got.DPoPJKT, got.Scopes, got.RequestedScopes) !=
				fmt.Sprintf("%#v %q %q %v", want.Token, want.DPoPJKT, want.Scopes, want.RequestedScopes) ||
				got.RefreshedAfterRejection != want.RefreshedAfterRejection || !got.Expiry.Equal(want.Expiry) {
				t.Errorf("%s: token %s = %#v, want %#v", when, k.Resource, got.Token, want.Token)
			}
		}
		reg, err := f.Registration(ctx, "https://as.example.com")
		if err != nil || reg.ClientSecret != "s1" || reg.TokenEndpointAuthMethod != "client_secret_basic" {
			t.Errorf("%s: registration %v, %v", when, reg, err)
		}
		d, err := f.Discovery(ctx, "https://mcp.example.com/mcp")
		if err != nil || d.AuthServer.TokenEndpoint != "https://as.example.com/token" || !d.Expires.Equal(epoch.Add(time.Hour)) {
			t.Errorf("%s: discovery %v, %v", when, d, err)
		}
	}
	check("as written before")
	if err := f.DeleteToken(ctx, Key{Issuer: "https://as.example.com", Resource: "https://none", ClientID: "x"}); err != nil {
		t.Fatal(err)
	}
	check("after a rewrite")
}
