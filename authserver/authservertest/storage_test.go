package authservertest_test

import (
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
)

// TestStorageMemory runs the storage conformance checks on the in-memory
// store.
func TestStorageMemory(t *testing.T) {
	authservertest.TestStorage(t, func(*testing.T) authserver.Storage { return authserver.NewMemoryStore().Storage() })
}
