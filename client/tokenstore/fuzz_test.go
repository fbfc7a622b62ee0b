package tokenstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzFileRead feeds arbitrary store files to the file store: it must
// never panic, and whatever it accepts it must be able to write back.
func FuzzFileRead(f *testing.F) {
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"tokens":[{"key":{"issuer":"i","resource":"r","client_id":"c"},"token":{"access_token":"a","token_type":"Bearer"}}]}`))
	f.Add([]byte(`{"version":1,"tokens":[{"key":{},"token":null}],"registrations":[null],"discoveries":[null]}`))
	f.Add([]byte(`{"version":1,"discoveries":[{"resource":"r","issuer":"i","authorization_server":{"issuer":"i"},"expires":"2026-01-01T00:00:00Z"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "s.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, _ := NewFile(path)
		ctx := context.Background()
		_, _ = s.Token(ctx, Key{Issuer: "i", Resource: "r", ClientID: "c"})
		_, _ = s.Registration(ctx, "i")
		_, _ = s.Discovery(ctx, "r")
		if _, err := s.read(false); err == nil {
			if err := s.PutRegistration(ctx, &Registration{Issuer: "x", ClientID: "y"}); err != nil {
				t.Fatalf("accepted file cannot be updated: %v", err)
			}
		}
	})
}
