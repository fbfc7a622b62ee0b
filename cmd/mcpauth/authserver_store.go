package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/boltstore"
	"github.com/mcpauth/mcpauth/authserver/pgstore"
	"github.com/mcpauth/mcpauth/internal/seal"
)

// dataFileName is the bbolt file inside --data-dir.
const dataFileName = "authserver.db"

// openStorage opens the store the flags name: PostgreSQL for
// --database-url, the bbolt file in --data-dir (created 0700 if missing),
// or none, which keeps everything in memory. The closer, nil for memory,
// is closed after the server.
func (f *authserverFlags) openStorage(ctx context.Context) (authserver.Storage, io.Closer, error) {
	switch {
	case f.databaseURL != "":
		st, err := f.openPostgres(ctx)
		if err != nil {
			return authserver.Storage{}, nil, err
		}
		return st.Storage(), st, nil
	case f.dataDir != "":
		if err := os.MkdirAll(f.dataDir, 0o700); err != nil {
			return authserver.Storage{}, nil, fmt.Errorf("--data-dir: %w", err)
		}
		st, err := boltstore.Open(filepath.Join(f.dataDir, dataFileName))
		if err != nil {
			return authserver.Storage{}, nil, err
		}
		return st.Storage(), st, nil
	}
	return authserver.Storage{}, nil, nil
}

// openPostgres opens the shared PostgreSQL store that --database-url
// names, with the key-encryption keys of --key-encryption-key and
// --old-key-encryption-key.
func (f *authserverFlags) openPostgres(ctx context.Context) (*pgstore.Store, error) {
	if f.dataDir != "" {
		return nil, errors.New("--data-dir and --database-url are exclusive: pick one place for the state")
	}
	url, err := secretValue("--database-url", f.databaseURL, os.Getenv)
	if err != nil {
		return nil, err
	}
	if f.keyEncryptionKey == "" {
		return nil, errors.New("--database-url needs --key-encryption-key (base64 of 32 random bytes, e.g. from `openssl rand -base64 32`), the same on every replica")
	}
	cfg := pgstore.Config{}
	if cfg.KeyEncryptionKey, err = parseKEK("--key-encryption-key", f.keyEncryptionKey); err != nil {
		return nil, err
	}
	for _, v := range f.oldKeyEncryptionKeys {
		k, err := parseKEK("--old-key-encryption-key", v)
		if err != nil {
			return nil, err
		}
		cfg.OldKeyEncryptionKeys = append(cfg.OldKeyEncryptionKeys, k)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return pgstore.Open(ctx, url, cfg)
}

func parseKEK(flagName, v string) ([]byte, error) {
	s, err := secretValue(flagName, v, os.Getenv)
	if err != nil {
		return nil, err
	}
	k, err := seal.ParseKey(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	return k, nil
}

// storageName says where the state lives, for the start-up log.
func (f *authserverFlags) storageName() string {
	switch {
	case f.databaseURL != "":
		return "postgresql"
	case f.dataDir != "":
		return "bbolt"
	default:
		return "memory"
	}
}
