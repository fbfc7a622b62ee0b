package boltstore_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/boltstore"
)

// Keep keys, clients and grants across restarts.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "authserver")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := boltstore.Open(filepath.Join(dir, "authserver.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	as, err := authserver.New(authserver.Config{Issuer: "https://as.example.com", Storage: st.Storage()})
	if err != nil {
		panic(err)
	}
	fmt.Println(as.Close())
	// Output: <nil>
}
