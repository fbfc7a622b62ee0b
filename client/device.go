package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// DeviceFlow configures the device authorization grant (RFC 8628), for
// hosts where no browser can reach a loopback redirect: over SSH, in a
// container, in CI. The client asks the authorization server's
// device_authorization_endpoint for a user code, shows it with Show, and
// polls the token endpoint until the user has approved on another device.
//
// When the device flow runs:
//
//   - Config.Authorizer nil: for every interactive authorization. An
//     authorization server whose metadata lacks
//     device_authorization_endpoint, or whose grant_types_supported does
//     not list urn:ietf:params:oauth:grant-type:device_code, is an error
//     ([ErrDiscovery]).
//   - Config.Authorizer set: only when the Authorizer fails with an error
//     wrapping [ErrNoBrowser] (it could not show the URL or receive the
//     redirect on loopback) and the authorization server offers the grant
//     as above; otherwise the Authorizer's error stands. [Loopback] fails
//     so when it cannot listen on 127.0.0.1, or when its Open fails so, as
//     [OpenBrowser] does when the platform's opener cannot start a
//     browser.
//
// The request carries the same "resource" and scopes as the code flow; a
// step-up runs the device flow again with the wider scopes, and with
// [Config.DPoP] the token request carries a proof. Polling waits
// "interval" seconds (5 when absent) between requests, adds 5 seconds at
// each slow_down, stops at expires_in, and ends with ctx.
type DeviceFlow struct {
	// Show presents the user code and the verification URI to the user;
	// an error aborts the authorization. Required. [PrintDeviceCode]
	// prints them.
	Show func(ctx context.Context, p *DevicePrompt) error
	// Sleep waits d or until ctx ends. Nil means a timer; tests pass one
	// that advances their clock.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DevicePrompt is what the user needs to approve a device authorization.
type DevicePrompt struct {
	// Issuer is the authorization server; Resource the MCP server.
	Issuer, Resource string
	// UserCode is the code to type at VerificationURI.
	UserCode string
	// VerificationURI is where to type it; VerificationURIComplete, when
	// not empty, has the code in it already. Both were checked against the
	// client's URL policy (https, or http to loopback when allowed).
	VerificationURI, VerificationURIComplete string
	// Expires is when the code stops working.
	Expires time.Time
}

// PrintDeviceCode returns a [DeviceFlow.Show] that writes the prompt to w
// (a terminal's stderr: never the stdout of a program whose output is a
// protocol).
func PrintDeviceCode(w io.Writer) func(ctx context.Context, p *DevicePrompt) error {
	return func(_ context.Context, p *DevicePrompt) error {
		msg := fmt.Sprintf("To authorize access to %s, open\n\n  %s\n\nand enter the code\n\n  %s\n\n",
			p.Resource, p.VerificationURI, p.UserCode)
		if p.VerificationURIComplete != "" {
			msg += fmt.Sprintf("(or open %s)\n", p.VerificationURIComplete)
		}
		msg += fmt.Sprintf("The code expires at %s.\n", p.Expires.Format(time.Kitchen))
		_, err := io.WriteString(w, msg)
		return err
	}
}

// ErrNoBrowser is wrapped by an [Authorizer]'s error when it cannot get
// the user to a browser or receive the redirect on loopback; with
// [Config.Device] the client then uses the device flow.
var ErrNoBrowser = errors.New("client: no browser can complete the authorization here")

// Reasons of the device flow.
var (
	errDeviceUnsupported = reason(ErrDiscovery, "authorization server does not offer the device authorization grant")
	errDeviceRequest     = reason(ErrAuthorization, "device authorization request failed")
	errDeviceExpired     = reason(ErrAuthorization, "the device code expired before the user approved")
	errDeviceDenied      = reason(ErrAuthorization, "the user or the authorization server denied the device authorization")
)

// maxDeviceResponse caps a device authorization response.
const maxDeviceResponse = 64 << 10

// offersDevice reports whether md offers the device grant.
func offersDevice(md *oauthmeta.AuthServerMetadata) bool {
	return md.DeviceAuthorizationEndpoint != "" &&
		(len(md.GrantTypesSupported) == 0 || md.SupportsGrantType(oauthmeta.GrantTypeDeviceCode))
}

// deviceLogin runs one device authorization for the resource of d and
// stores the token under (issuer, resource indicator, client_id).
func (c *Client) deviceLogin(ctx context.Context, d *tokenstore.Discovery, scopes []string, key *dpopKey, a *attempts) error {
	md := d.AuthServer
	if !offersDevice(md) {
		return errDeviceUnsupported
	}
	reg, registered, err := c.registration(ctx, d, DefaultRedirectURI)
	if err != nil {
		return err
	}
	tok, err := c.deviceToken(ctx, d, reg, scopes, key)
	if err != nil {
		rec := &pendingAuthorization{registration: reg, registered: registered}
		if refusedClient(err) && c.replaceRegistration(ctx, rec, a) {
			return c.deviceLogin(ctx, d, scopes, key, a)
		}
		return err
	}
	tk := tokenstore.Key{Issuer: md.Issuer, Resource: d.ResourceIndicator, ClientID: reg.ClientID}
	if err := c.store.PutToken(ctx, tk, tok); err != nil {
		return err
	}
	c.log.InfoContext(ctx, "authorized on another device", "resource", d.Resource, "issuer", md.Issuer, "scopes", tok.Scopes)
	return nil
}

// deviceToken asks for a device code, shows it and polls for the token.
func (c *Client) deviceToken(ctx context.Context, d *tokenstore.Discovery, reg *tokenstore.Registration, scopes []string, key *dpopKey) (*tokenstore.Token, error) {
	md := d.AuthServer
	auth := registeredAuth(reg, md)
	resp, err := c.startDevice(ctx, md, auth, d.ResourceIndicator, scopes)
	if err != nil {
		return nil, err
	}
	now := c.clock.Now()
	prompt := &DevicePrompt{Issuer: md.Issuer, Resource: d.Resource, UserCode: resp.UserCode,
		VerificationURI: resp.VerificationURI, VerificationURIComplete: resp.VerificationURIComplete,
		Expires: now.Add(time.Duration(min(resp.ExpiresIn, maxExpiresIn)) * time.Second)}
	if err := c.cfg.Device.Show(ctx, prompt); err != nil {
		return nil, fmt.Errorf("%w: showing the code: %w", errAuthorizer, err)
	}
	interval := 5 * time.Second
	if resp.Interval > 0 {
		interval = time.Duration(min(resp.Interval, 600)) * time.Second
	}
	form := func() url.Values {
		return url.Values{"grant_type": {oauthmeta.GrantTypeDeviceCode}, "device_code": {resp.DeviceCode},
			"resource": {d.ResourceIndicator}}
	}
	for {
		if err := c.sleep(ctx, interval); err != nil {
			return nil, err
		}
		if !c.clock.Now().Before(prompt.Expires) {
			return nil, errDeviceExpired
		}
		tok, err := c.postToken(ctx, md.TokenEndpoint, form(), auth, md.Issuer, key, resp.DeviceCode)
		switch {
		case err == nil:
			return c.newToken(tok, key, scopes, nil)
		case errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeAuthorizationPending}):
		case errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeSlowDown}):
			interval += 5 * time.Second // RFC 8628 §3.5, for this and every later request
		case errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeExpiredToken}):
			return nil, fmt.Errorf("%w: %w", errDeviceExpired, err)
		case errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeAccessDenied}):
			return nil, fmt.Errorf("%w: %w", errDeviceDenied, err)
		default:
			return nil, err
		}
	}
}

// sleep waits d with the configured Sleep, or a timer.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if s := c.cfg.Device.Sleep; s != nil {
		return s(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startDevice sends the device authorization request (RFC 8628 §3.1)
// with the client's token endpoint authentication, the resource and the
// scopes, and checks the answer, its URLs included.
func (c *Client) startDevice(ctx context.Context, md *oauthmeta.AuthServerMetadata, auth *clientAuth, resource string, scopes []string) (*oauthmeta.DeviceAuthorizationResponse, error) {
	a, err := auth.encode(md.Issuer)
	if err != nil {
		return nil, err
	}
	form := url.Values{"resource": {resource}}
	if len(scopes) > 0 {
		form.Set("scope", oauthmeta.FormatScope(scopes))
	}
	authorization := a.addTo(form)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.DeviceAuthorizationEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", reason(ErrAuthorization, reasonUnsafeURL), err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	status, header, body, err := c.post(ErrAuthorization, req, maxDeviceResponse)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		if oe, perr := oauthmeta.ParseError(body); perr == nil && jsonContent(header) {
			return nil, fmt.Errorf("%w: status %d: %w", errDeviceRequest, status, sanitizeError(oe, a.sent...))
		}
		return nil, fmt.Errorf("%w: status %d", errDeviceRequest, status)
	}
	if !jsonContent(header) {
		return nil, fmt.Errorf("%w: response is not JSON", errDeviceRequest)
	}
	resp, err := oauthmeta.ParseDeviceAuthorizationResponse(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDeviceRequest, err)
	}
	for _, u := range []string{resp.VerificationURI, resp.VerificationURIComplete} {
		if u == "" {
			continue
		}
		if err := c.policy.CheckURL(u); err != nil {
			return nil, fmt.Errorf("%w: verification URI: %w", errUnsafeAuthorizationURL, err)
		}
		if err := checkBrowserURL(u); err != nil {
			return nil, err
		}
	}
	if len(resp.UserCode) > 64 || strings.ContainsFunc(resp.UserCode, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return nil, fmt.Errorf("%w: unusable user_code", errDeviceRequest)
	}
	return resp, nil
}

// deviceGrantTypes adds the device grant to a dynamic registration's
// grant types when the client may use the device flow at md.
func (c *Client) deviceGrantTypes(grants []string, md *oauthmeta.AuthServerMetadata) []string {
	if c.cfg.Device == nil || !offersDevice(md) || slices.Contains(grants, oauthmeta.GrantTypeDeviceCode) {
		return grants
	}
	return append(grants, oauthmeta.GrantTypeDeviceCode)
}
