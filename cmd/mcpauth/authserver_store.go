package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/seal"
)

// openPostgres opens the shared PostgreSQL store that --database-url
// names, with the key-encryption keys of --key-encryption-key and
// --old-key-encryption-key.
func (f *authserverFlags) openPostgres(ctx context.Context) (*authserver.PostgresStore, error) {
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
	cfg := authserver.PostgresConfig{}
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
	return authserver.OpenPostgresStore(ctx, url, cfg)
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
