package checkerr

import (
	"errors"
	"fmt"
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

func TestOAuth(t *testing.T) {
	t.Parallel()
	if OAuth(nil, oauthmeta.CodeInvalidRequest) != nil {
		t.Fatal("OAuth(nil) is not nil")
	}
	reason := errors.New("pkg: bad")
	err := fmt.Errorf("wrapped: %w", New(reason, oauthmeta.CodeInvalidGrant, "pkg: ", ""))
	if oe := OAuth(err, oauthmeta.CodeInvalidRequest); oe == nil || oe.Code != oauthmeta.CodeInvalidGrant || oe.Description != "bad" {
		t.Fatalf("OAuth of a wrapped check error = %+v", oe)
	}
	if oe := OAuth(errors.New("outside"), oauthmeta.CodeInvalidDPoPProof); oe == nil || oe.Code != oauthmeta.CodeInvalidDPoPProof || oe.Description != "" {
		t.Fatalf("OAuth of a foreign error = %+v", oe)
	}
}
