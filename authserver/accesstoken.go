package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// accessClaims are the RFC 9068 §2.2 claims of an access token.
type accessClaims struct {
	Issuer   string             `json:"iss"`
	Subject  string             `json:"sub"`
	Audience oauthmeta.Audience `json:"aud"`
	ClientID string             `json:"client_id"`
	Scope    string             `json:"scope,omitempty"`
	IssuedAt int64              `json:"iat"`
	Expires  int64              `json:"exp"`
	JTI      string             `json:"jti"`
	// Cnf binds a DPoP token to its key (RFC 9449 §6.1, "jkt").
	Cnf *oauthmeta.Confirmation `json:"cnf,omitempty"`
	// Act names the party that obtained the token by a token exchange,
	// acting for Subject (RFC 8693 §4.1): the resource server of a
	// downstream exchange, or the chain of a delegation, current actor
	// outermost.
	Act *oauthmeta.Actor `json:"act,omitempty"`
	// MayAct names the party that may obtain a delegated token from this
	// one (RFC 8693 §4.4); nil means any actor the delegation rules allow.
	MayAct *oauthmeta.Actor `json:"may_act,omitempty"`
	// DelegatedFrom are the jtis of the tokens a delegated token was
	// derived from, root first, so that revoking any of them ends it.
	DelegatedFrom []string `json:"delegated_from,omitempty"`
}

// jtiSeparator splits a jti into the grant ID and a random suffix, so that
// introspection can find the grant of an access token without storing every
// token.
const jtiSeparator = "."

// accessTokens issues and verifies this server's RFC 9068 JWT access
// tokens, signed with the keyring's current key. It is safe for
// concurrent use.
type accessTokens struct {
	issuer string
	keys   *keyring
	ttl    time.Duration // Config.AccessTokenTTL
	// defaultResource is the audience of a token for no resource:
	// Config.DefaultResource, else the issuer.
	defaultResource string
	// mayAct is Config.Delegation's MayAct (nil without delegation).
	mayAct map[string]oauthmeta.Actor
}

// issue signs an RFC 9068 JWT access token of grant g (requirement
// AS-11): header typ "at+jwt" and kid; claims iss, sub, aud (the
// resources), client_id, scope, iat, exp, jti, and cnf.jkt when jkt names
// the DPoP key the token is bound to (RFC 9449 §6.1).
func (t *accessTokens) issue(ctx context.Context, g *Grant, scopes, resources []string, now time.Time, jkt string) (string, error) {
	return t.sign(ctx, t.claims(g, scopes, resources, now, jkt), now)
}

// claims are the claims of an access token of grant g.
func (t *accessTokens) claims(g *Grant, scopes, resources []string, now time.Time, jkt string) *accessClaims {
	aud := oauthmeta.Audience(resources)
	if len(aud) == 0 {
		aud = oauthmeta.Audience{t.defaultResource}
	}
	claims := accessClaims{
		Issuer:   t.issuer,
		Subject:  g.Subject,
		Audience: aud,
		ClientID: g.ClientID,
		Scope:    oauthmeta.FormatScope(scopes),
		IssuedAt: now.Unix(),
		Expires:  now.Add(t.ttl).Unix(),
		JTI:      g.ID + jtiSeparator + randomToken(12),
	}
	if jkt != "" {
		claims.Cnf = &oauthmeta.Confirmation{JKT: jkt}
	}
	claims.MayAct = t.mayActFor(g.ClientID)
	return &claims
}

// mayActFor returns the "may_act" of the tokens held by holder (a
// client_id, or a delegated token's current actor), nil when none is
// configured.
func (t *accessTokens) mayActFor(holder string) *oauthmeta.Actor {
	if a, ok := t.mayAct[holder]; ok {
		return &oauthmeta.Actor{Subject: a.Subject, Issuer: a.Issuer}
	}
	return nil
}

// sign signs claims as an RFC 9068 JWT access token: header typ "at+jwt"
// and the kid of the current signing key.
func (t *accessTokens) sign(ctx context.Context, claims *accessClaims, now time.Time) (string, error) {
	key, err := t.signingKey(ctx, now)
	if err != nil {
		return "", err
	}
	return signClaims(key, claims)
}

// signingKey returns the key that signs at now, for a caller that must
// have it before it commits to issuing (see signClaims).
func (t *accessTokens) signingKey(ctx context.Context, now time.Time) (*liveKey, error) {
	return t.keys.signingKey(ctx, now)
}

// signClaims signs claims with key, whose signer sets typ "at+jwt" and the
// kid.
func signClaims(key *liveKey, claims *accessClaims) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := key.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("authserver: signing access token: %w", err)
	}
	return jws.CompactSerialize()
}

// errNotOurToken is the internal reason a string is not a valid access
// token of this server; callers answer {"active":false}.
var errNotOurToken = errors.New("authserver: not a valid access token")

// maxTokenLength bounds a token presented to introspection or revocation.
const maxTokenLength = 8 << 10

// parse verifies a JWT access token issued by this server through the
// module's one JWT path (jwtverify): one of our algorithms, typ at+jwt, a
// published kid, a valid signature, then our issuer, a jti, and exp (in
// the future), nbf and iat by the one time rule.
func (t *accessTokens) parse(raw string, now time.Time) (*accessClaims, error) {
	if len(raw) > maxTokenLength {
		return nil, errNotOurToken
	}
	jws, err := jwtverify.ParseCompact(raw, jwa.JOSE[jose.SignatureAlgorithm](jwa.Defaults(jwa.ServerToken)))
	if err != nil {
		return nil, errNotOurToken
	}
	if typ, _ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string); !jwtverify.TypeIs(typ, "at+jwt") {
		return nil, errNotOurToken
	}
	if _, err := jwtverify.VerifySignature(context.Background(), jws, ownKeys{t.keys, now}); err != nil {
		return nil, errNotOurToken
	}
	payload := jws.UnsafePayloadWithoutVerification()
	var rc jwtverify.Claims
	var c accessClaims
	if jwtverify.DecodeClaims(payload, &rc) != nil || jsonx.DecodeObject(payload, &c) != nil || c.JTI == "" || rc.Issuer != t.issuer {
		return nil, errNotOurToken
	}
	if _, _, err := (jwtverify.Times{}).Check(&rc, now); err != nil {
		return nil, errNotOurToken
	}
	return &c, nil
}

// ownKeys is the keyring at an instant as a keyset.Source: the published,
// unexpired key with the requested ID.
type ownKeys struct {
	k   *keyring
	now time.Time
}

func (o ownKeys) Keys(_ context.Context, kid string) ([]keyset.Key, error) {
	pub, ok := o.k.verificationKey(kid, o.now)
	if !ok {
		return nil, keyset.ErrUnknownKey
	}
	return []keyset.Key{{ID: pub.KeyID, Algorithm: pub.Algorithm, Public: pub.Key}}, nil
}

// grantIDFromJTI returns the grant part of a jti.
func grantIDFromJTI(jti string) string {
	id, _, _ := strings.Cut(jti, jtiSeparator)
	return id
}

// response builds the RFC 6749 §5.1 response; token_type is DPoP for a
// token bound to the key jkt (RFC 9449 §5).
func (t *accessTokens) response(access, refresh string, scopes []string, jkt string) *oauthmeta.TokenResponse {
	tt := "Bearer"
	if jkt != "" {
		tt = dpop.TokenType
	}
	return &oauthmeta.TokenResponse{
		AccessToken:  access,
		TokenType:    tt,
		ExpiresIn:    int64(t.ttl.Seconds()),
		RefreshToken: refresh,
		Scope:        oauthmeta.FormatScope(scopes),
	}
}
