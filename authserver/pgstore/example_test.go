package pgstore_test

import (
	"context"
	"encoding/base64"
	"log"
	"os"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/pgstore"
)

// Replicas of one issuer share their state in PostgreSQL; each opens the
// store with the same key-encryption key.
func ExampleOpen() {
	ctx := context.Background()
	// 32 random bytes, e.g. from `openssl rand -base64 32`.
	kek, err := base64.StdEncoding.DecodeString(os.Getenv("KEY_ENCRYPTION_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	st, err := pgstore.Open(ctx, os.Getenv("DATABASE_URL"), pgstore.Config{KeyEncryptionKey: kek})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	as, err := authserver.New(authserver.Config{Issuer: "https://as.example.com", Storage: st.Storage()})
	if err != nil {
		log.Fatal(err)
	}
	defer as.Close()
	// Serve as on every replica, behind one load balancer.
}
