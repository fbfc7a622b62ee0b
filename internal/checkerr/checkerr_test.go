package checkerr

import (
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

func TestNew(t *testing.T) {
	t.Parallel()
	reason := errors.New("pkg: proof replayed")
	for _, tt := range []struct {
		detail, msg, desc string
	}{
		{"", "pkg: proof replayed", "proof replayed"},
		{"same jti", "pkg: proof replayed: same jti", "proof replayed (same jti)"},
	} {
		err := New(reason, oauthmeta.CodeInvalidDPoPProof, "pkg: ", tt.detail)
		if !errors.Is(err, reason) {
			t.Errorf("errors.Is(reason) = false")
		}
		if !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidDPoPProof}) {
			t.Errorf("errors.Is(code) = false")
		}
		var oe *oauthmeta.Error
		if !errors.As(err, &oe) || oe.Description != tt.desc {
			t.Errorf("description = %q, want %q", oe.Description, tt.desc)
		}
		if err.Error() != tt.msg {
			t.Errorf("Error() = %q, want %q", err.Error(), tt.msg)
		}
	}
}
