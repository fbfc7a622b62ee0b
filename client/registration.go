package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// maxRegistrationResponse caps a registration response body.
const maxRegistrationResponse = 1 << 20

// registration returns this client's identity at the authorization server
// of d, for an authorization request that will use redirectURI. The order
// is MCP's: pre-registered credentials for exactly this
// issuer; a stored registration from an earlier run; the Client ID Metadata
// Document when the server supports it; dynamic registration; else
// a clear error. Credentials are looked up by exact issuer only, so they
// are never shown to another server. registered reports a dynamic
// registration made by this call.
func (c *Client) registration(ctx context.Context, d *tokenstore.Discovery, redirectURI string) (r *tokenstore.Registration, registered bool, err error) {
	if r := c.preRegistered(d.Issuer); r != nil {
		return r, false, nil
	}
	md := d.AuthServer
	if r, err := c.store.Registration(ctx, d.Issuer); err == nil && c.reusable(r, md, redirectURI) {
		return r, false, nil
	}
	if c.cfg.ClientIDMetadataURL != "" && md.ClientIDMetadataDocumentSupported {
		r := &tokenstore.Registration{
			Issuer: d.Issuer, Method: tokenstore.MethodCIMD, ClientID: c.cfg.ClientIDMetadataURL,
			TokenEndpointAuthMethod: oauthmeta.AuthMethodNone, RegisteredAt: c.clock.Now(),
		}
		if err := c.store.PutRegistration(ctx, r); err != nil {
			return nil, false, err
		}
		return r, false, nil
	}
	if !c.cfg.DisableDynamicRegistration && md.RegistrationEndpoint != "" {
		r, err := c.register(ctx, md, redirectURI)
		if err != nil {
			return nil, false, err
		}
		if err := c.store.PutRegistration(ctx, r); err != nil {
			return nil, false, err
		}
		c.log.InfoContext(ctx, "registered dynamically", "registration", r)
		return r, true, nil
	}
	if len(c.cfg.PreRegistered) > 0 {
		return nil, false, fmt.Errorf("%w (%w)", errIssuerChanged, errNoRegistration)
	}
	return nil, false, errNoRegistration
}

// refusedClient reports a token endpoint answer of invalid_client (RFC
// 6749 §5.2): the server does not know the client or its credentials,
// which for a dynamic registration means it was deleted (some servers
// delete idle ones, Cloudflare's after 90 days).
func refusedClient(err error) bool {
	return errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidClient})
}

// replaceRegistration decides the recovery from an invalid_client at the
// code exchange of rec: when rec used a dynamic registration stored by an
// earlier run, and the operation has not replaced one yet, the stored
// registration is dropped, so that the next authorization registers
// anew; it reports whether to start that authorization. The code itself
// is bound to the refused client_id and is never redeemed again. A
// pre-registered or Client ID Metadata Document client, or a registration
// made for this very authorization, is not replaced: the refusal is the
// answer.
func (c *Client) replaceRegistration(ctx context.Context, rec *pendingAuthorization, a *attempts) bool {
	r := rec.registration
	if r.Method != tokenstore.MethodDynamic || rec.registered || a.reregistered {
		return false
	}
	a.reregistered = true
	c.dropRegistration(ctx, r)
	return true
}

// dropRegistration deletes the stored dynamic registration r, if it is
// still the one stored (another process may have replaced it already).
func (c *Client) dropRegistration(ctx context.Context, r *tokenstore.Registration) {
	cur, err := c.store.Registration(ctx, r.Issuer)
	if err != nil || cur.Method != tokenstore.MethodDynamic || cur.ClientID != r.ClientID {
		return
	}
	if err := c.store.DeleteRegistration(ctx, r.Issuer); err != nil {
		c.log.WarnContext(ctx, "could not delete a refused registration", "issuer", r.Issuer, "error", err)
		return
	}
	c.log.WarnContext(ctx, "the authorization server refused the dynamic registration (invalid_client); registering again",
		"issuer", r.Issuer, "registration", r)
}

// preRegistered returns the configured credentials bound to exactly issuer.
func (c *Client) preRegistered(issuer string) *tokenstore.Registration {
	for _, p := range c.cfg.PreRegistered {
		if p.Issuer == issuer {
			return &tokenstore.Registration{
				Issuer: p.Issuer, Method: tokenstore.MethodPreRegistered, ClientID: p.ClientID,
				ClientSecret: p.ClientSecret, TokenEndpointAuthMethod: p.TokenEndpointAuthMethod,
			}
		}
	}
	return nil
}

// currentRegistration returns the registration tokens for issuer were
// obtained with, without registering: pre-registered or stored.
func (c *Client) currentRegistration(ctx context.Context, issuer string) *tokenstore.Registration {
	if c.flow != nil {
		id, ok := c.flow.clientID(issuer)
		if !ok {
			return nil
		}
		return &tokenstore.Registration{Issuer: issuer, Method: tokenstore.MethodPreRegistered, ClientID: id}
	}
	if r := c.preRegistered(issuer); r != nil {
		return r
	}
	if r, err := c.store.Registration(ctx, issuer); err == nil {
		if r.Method == tokenstore.MethodCIMD && r.ClientID != c.cfg.ClientIDMetadataURL {
			return nil
		}
		return r
	}
	return nil
}

// reusable reports whether a stored registration can serve an
// authorization request with redirectURI: its secret has not expired, it
// is not a metadata document registration the configuration dropped or
// the server stopped supporting, and it lists the redirect URI (a loopback
// redirect may differ in port, RFC 8252 §7.3).
func (c *Client) reusable(r *tokenstore.Registration, md *oauthmeta.AuthServerMetadata, redirectURI string) bool {
	if !r.ClientSecretExpiresAt.IsZero() && !c.clock.Now().Before(r.ClientSecretExpiresAt) {
		return false
	}
	if r.Method == tokenstore.MethodCIMD {
		return r.ClientID == c.cfg.ClientIDMetadataURL && md.ClientIDMetadataDocumentSupported
	}
	if len(r.GrantTypes) > 0 && !subset(c.deviceGrantTypes(nil, md), r.GrantTypes) {
		return false // registered before the device flow was configured
	}
	return slices.ContainsFunc(r.RedirectURIs, func(u string) bool { return sameRedirect(u, redirectURI) })
}

// sameRedirect compares redirect URIs exactly, except that loopback IP
// literal redirects may differ in port.
func sameRedirect(registered, requested string) bool {
	if registered == requested {
		return true
	}
	a, err1 := url.Parse(registered)
	b, err2 := url.Parse(requested)
	if err1 != nil || err2 != nil || a.Scheme != "http" || b.Scheme != "http" {
		return false
	}
	// RFC 8252 §7.3: loopback IP literals, not "localhost".
	return oauthmeta.IsLoopbackHost(a.Hostname()) && !ascii.EqualFold(a.Hostname(), "localhost") && a.Hostname() == b.Hostname() && a.EscapedPath() == b.EscapedPath() &&
		a.RawQuery == b.RawQuery
}

// register performs RFC 7591 dynamic client registration with
// application_type and the refresh_token grant (SEP-2207).
func (c *Client) register(ctx context.Context, md *oauthmeta.AuthServerMetadata, redirectURI string) (*tokenstore.Registration, error) {
	method := dcrAuthMethod(md)
	meta := oauthmeta.ClientMetadata{
		RedirectURIs:            []string{redirectURI},
		TokenEndpointAuthMethod: method,
		GrantTypes:              []string{oauthmeta.GrantTypeAuthorizationCode},
		ResponseTypes:           []string{"code"},
		ClientName:              c.cfg.ClientName,
		ApplicationType:         c.applicationType(redirectURI),
	}
	if len(md.GrantTypesSupported) == 0 || md.SupportsGrantType(oauthmeta.GrantTypeRefreshToken) {
		meta.GrantTypes = append(meta.GrantTypes, oauthmeta.GrantTypeRefreshToken)
	}
	meta.GrantTypes = c.deviceGrantTypes(meta.GrantTypes, md)
	body, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnsafeURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	status, header, respBody, err := c.post(ErrDiscovery, req, maxRegistrationResponse)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRegistration, err)
	}
	if status != http.StatusCreated && status != http.StatusOK {
		if oe, perr := oauthmeta.ParseError(respBody); perr == nil && jsonContent(header) {
			return nil, fmt.Errorf("%w: status %d: %w", errRegistration, status, sanitizeError(oe))
		}
		return nil, fmt.Errorf("%w: status %d", errRegistration, status)
	}
	if !jsonContent(header) {
		return nil, fmt.Errorf("%w: response is not JSON", errRegistration)
	}
	info, err := oauthmeta.ParseClientInformation(respBody)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRegistration, err)
	}
	r := &tokenstore.Registration{
		Issuer: md.Issuer, Method: tokenstore.MethodDynamic, ClientID: info.ClientID,
		ClientSecret: info.ClientSecret, TokenEndpointAuthMethod: cmp.Or(info.TokenEndpointAuthMethod, method),
		RedirectURIs: info.RedirectURIs, RegisteredAt: c.clock.Now(), GrantTypes: info.GrantTypes,
	}
	if len(r.GrantTypes) == 0 {
		r.GrantTypes = meta.GrantTypes
	}
	if len(r.RedirectURIs) == 0 {
		r.RedirectURIs = []string{redirectURI}
	}
	if info.ClientSecretExpiresAt > 0 {
		r.ClientSecretExpiresAt = time.Unix(info.ClientSecretExpiresAt, 0)
	}
	return r, nil
}

// dcrAuthMethod picks the token endpoint authentication method to register:
// a public client ("none") when the server accepts it, else a secret.
func dcrAuthMethod(md *oauthmeta.AuthServerMetadata) string {
	for _, m := range []string{oauthmeta.AuthMethodNone, oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost} {
		if md.SupportsTokenEndpointAuthMethod(m) {
			return m
		}
	}
	return oauthmeta.AuthMethodClientSecretBasic
}

func (c *Client) applicationType(redirectURI string) string {
	if c.cfg.ApplicationType != "" {
		return c.cfg.ApplicationType
	}
	if u, err := url.Parse(redirectURI); err == nil && oauthmeta.IsLoopbackHost(u.Hostname()) {
		return "native"
	}
	return "web"
}

// post sends req through the SSRF-guarded client, never following a
// redirect, and returns the status, header and body (at most max bytes).
func (c *Client) post(class error, req *http.Request, max int64) (int, http.Header, []byte, error) {
	if err := c.fetcher.CheckURL(req.URL.String()); err != nil {
		return 0, nil, nil, wrapFetch(class, "POST", err)
	}
	resp, err := c.guardedClient(nil).Do(req)
	if err != nil {
		return 0, nil, nil, wrapFetch(class, "POST", unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.ContentLength > max {
		return 0, nil, nil, reason(class, reasonResponseTooBig)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return 0, nil, nil, wrapFetch(class, "POST", unwrapURLError(err))
	}
	if int64(len(body)) > max {
		return 0, nil, nil, reason(class, reasonResponseTooBig)
	}
	return resp.StatusCode, resp.Header, body, nil
}

// guardedClient returns an http.Client over the SSRF-guarded transport
// that never follows redirects, optionally wrapping the transport.
func (c *Client) guardedClient(wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	base := c.fetcher.Client()
	rt := base.Transport
	if wrap != nil {
		rt = wrap(rt)
	}
	return &http.Client{
		Transport:     rt,
		Timeout:       c.cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func jsonContent(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// unwrapURLError strips *url.Error, whose message repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// sanitizeError bounds the text of an error from a server, which is shown
// to users: anything but printable ASCII is dropped first (so that a
// credential the server echoes with control bytes inside cannot reappear
// once they are gone), then every occurrence of a credential the request
// carried is replaced, then each field is cut to 200 bytes.
func sanitizeError(e *oauthmeta.Error, sent ...string) *oauthmeta.Error {
	clean := func(s string) string {
		s = strings.Map(func(r rune) rune {
			if r >= 0x20 && r < 0x7f {
				return r
			}
			return -1
		}, s)
		for _, secret := range sent {
			if secret != "" {
				s = strings.ReplaceAll(s, secret, "[redacted]")
			}
		}
		return s[:min(len(s), 200)]
	}
	return &oauthmeta.Error{Code: oauthmeta.ErrorCode(clean(string(e.Code))), Description: clean(e.Description), URI: clean(e.URI)}
}
