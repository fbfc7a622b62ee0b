package attack

import (
	"errors"

	"github.com/mcpauth/mcpauth/resource"
)

// refusal is the expected outcome of a refused request: the class callers
// branch on with errors.Is, and the fixed reason an audit event reports
// (operators alert on these strings, so the suite pins them).
type refusal struct {
	class  error
	reason string
}

func (r refusal) Error() string { return "resource: " + r.reason }

// refused reports whether err is want: for a refusal, an
// *resource.Error of its class and reason; otherwise errors.Is.
func refused(err, want error) bool {
	r, ok := want.(refusal)
	if !ok {
		return errors.Is(err, want)
	}
	var re *resource.Error
	return errors.As(err, &re) && re.Reason == r.reason && errors.Is(err, r.class)
}

// The reasons the attack suite expects.
var (
	reasonAlgorithm            = refusal{resource.ErrInvalidToken, "signing algorithm not accepted"}
	reasonAudience             = refusal{resource.ErrInvalidToken, "token is not for this resource"}
	reasonBoundToken           = refusal{resource.ErrInvalidToken, "sender-constrained token presented as bearer"}
	reasonExpired              = refusal{resource.ErrInvalidToken, "token expired"}
	reasonHeaderMismatch       = refusal{resource.ErrBadMessage, "Mcp-Method or Mcp-Name header does not match the body"}
	reasonIssuedInFuture       = refusal{resource.ErrInvalidToken, "token issued in the future"}
	reasonIssuer               = refusal{resource.ErrInvalidToken, "issuer not accepted"}
	reasonMalformedCredentials = refusal{resource.ErrInvalidRequest, "malformed Authorization header"}
	reasonMalformedToken       = refusal{resource.ErrInvalidToken, "token is malformed"}
	reasonMissingExpiry        = refusal{resource.ErrInvalidToken, "token has no expiry"}
	reasonMultipleCredentials  = refusal{resource.ErrInvalidRequest, "more than one credential in the request"}
	reasonNotYetValid          = refusal{resource.ErrInvalidToken, "token not yet valid"}
	reasonOriginNotAllowed     = refusal{resource.ErrForbiddenOrigin, "origin not allowed"}
	reasonSignature            = refusal{resource.ErrInvalidToken, "signature is invalid"}
	reasonTokenInQuery         = refusal{resource.ErrInvalidRequest, "access token in the query string"}
	reasonTokenTooLarge        = refusal{resource.ErrInvalidToken, "token is too large"}
	reasonTokenType            = refusal{resource.ErrInvalidToken, "token type not accepted"}
)
