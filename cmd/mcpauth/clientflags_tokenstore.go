package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/mcpauth/mcpauth/client/tokenstore"
)

// sharedStore is a token store that several processes may share: the
// file, or the operating system's keychain.
type sharedStore interface {
	tokenstore.Store
	tokenstore.Locker
}

// registerTokenStore registers --token-store on the client commands.
func registerTokenStore(fs *flag.FlagSet, kind *string) {
	fs.StringVar(kind, "token-store", "file", "where tokens are kept: file (--store, mode 0600), keychain (the OS keychain: macOS Keychain, "+
		"Windows Credential Manager, Secret Service on Linux; an error when it does not answer) or auto (the keychain when it answers, else the file); "+
		"the keychain's lock files go in the directory of --store")
}

// openStore opens the store --token-store names; path is --store (or its
// default). With auto, a keychain that does not answer is reported on
// stderr and the file is used.
func openStore(ctx context.Context, kind, path string, stderr io.Writer) (sharedStore, error) {
	file := func() (sharedStore, error) {
		f, err := tokenstore.NewFile(path)
		if err != nil {
			return nil, fmt.Errorf("--store: %w", err)
		}
		return f, nil
	}
	switch kind {
	case "file":
		return file()
	case "keychain", "auto":
	default:
		return nil, fmt.Errorf("--token-store: %q is not file, keychain or auto", kind)
	}
	k, err := tokenstore.NewKeychain(tokenstore.KeychainConfig{Dir: filepath.Dir(path)})
	if err != nil {
		return nil, fmt.Errorf("--token-store: %w", err)
	}
	if err := k.Available(ctx); err != nil {
		if kind == "keychain" {
			return nil, fmt.Errorf("--token-store keychain: the OS keychain does not answer: %w", err)
		}
		fmt.Fprintf(stderr, "The OS keychain does not answer (%v); keeping tokens in %s.\n", err, path)
		return file()
	}
	return k, nil
}
