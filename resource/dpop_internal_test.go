package resource

import (
	"net/textproto"
	"testing"

	"github.com/mcpauth/mcpauth/dpop"
)

// TestDPoPHeaderKey: the key the middleware deletes is the canonical form
// of the DPoP header name, the one net/http stores.
func TestDPoPHeaderKey(t *testing.T) {
	t.Parallel()
	if got := textproto.CanonicalMIMEHeaderKey(dpop.HeaderName); got != dpopHeaderKey {
		t.Fatalf("canonical key %q, want %q", got, dpopHeaderKey)
	}
}
