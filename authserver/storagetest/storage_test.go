package storagetest_test

import (
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/storagetest"
)

// TestStorageMemory runs the storage conformance checks on the in-memory
// store.
func TestStorageMemory(t *testing.T) {
	storagetest.Run(t, func(*testing.T) authserver.Storage { return authserver.NewMemoryStore().Storage() })
}
