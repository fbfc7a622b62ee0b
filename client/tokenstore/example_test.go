package tokenstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client/tokenstore"
)

func ExampleNewFile() {
	dir, _ := os.MkdirTemp("", "tokenstore-example")
	defer os.RemoveAll(dir)

	store, err := tokenstore.NewFile(filepath.Join(dir, "mcp-tokens.json"))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	key := tokenstore.Key{Issuer: "https://as.example.com", Resource: "https://mcp.example.com/mcp", ClientID: "client-1"}
	_ = store.PutToken(ctx, key, &tokenstore.Token{Token: oauth2.Token{AccessToken: "secret", TokenType: "Bearer"}})

	tok, _ := store.Token(ctx, key)
	fmt.Println(tok.TokenType, tok) // formatting never shows the token
	fi, _ := os.Stat(store.Path())
	fmt.Println(fi.Mode().Perm())
	// Output:
	// Bearer tokenstore.Token{type:Bearer, access_token:<redacted>, expiry:0001-01-01T00:00:00Z}
	// -rw-------
}

func ExampleNewMemory() {
	store := tokenstore.NewMemory()
	ctx := context.Background()
	_ = store.PutRegistration(ctx, &tokenstore.Registration{
		Issuer: "https://as.example.com", Method: tokenstore.MethodDynamic, ClientID: "abc",
	})
	_, err := store.Registration(ctx, "https://other-as.example.com")
	fmt.Println(err) // registrations never cross issuers
	// Output: tokenstore: not found
}

// Keep tokens in the operating system's keychain when it answers, in a
// 0600 file otherwise, as `mcpauth login --token-store auto` does.
func ExampleNewKeychain() {
	dir, _ := os.UserConfigDir()
	dir = filepath.Join(dir, "mcpauth")
	var store tokenstore.Store
	keychain, err := tokenstore.NewKeychain(tokenstore.KeychainConfig{Dir: dir})
	if err == nil && keychain.Available(context.Background()) == nil {
		store = keychain
	} else {
		store, _ = tokenstore.NewFile(filepath.Join(dir, "tokens.json"))
	}
	_ = store // Config.Store of package client
}
