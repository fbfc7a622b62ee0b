package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// adminFlags turn on the authorization server's admin API.
type adminFlags struct {
	token string
}

func (a *adminFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.token, "admin-token", "", "env:VAR: serve the admin API (list and revoke users' grants: `mcpauth authserver grants`) to requests bearing the token in $VAR, at least 32 bytes (default: no admin API)")
}

// apply sets cfg.Admin from --admin-token.
func (a *adminFlags) apply(cfg *authserver.Config) error {
	if a.token == "" {
		return nil
	}
	tok, err := envSecret("--admin-token", a.token, os.Getenv)
	if err != nil {
		return err
	}
	if len(tok) < authserver.MinAdminTokenBytes {
		return fmt.Errorf("--admin-token: the token must be at least %d bytes", authserver.MinAdminTokenBytes)
	}
	cfg.Admin = &authserver.AdminConfig{Token: tok}
	return nil
}

const grantsDescription = `
Lists or revokes a user's grants (and connected accounts) through the admin API of a running
authorization server started with --admin-token.

  mcpauth authserver grants list   --issuer URL --admin-token env:VAR --sub SUBJECT
  mcpauth authserver grants revoke --issuer URL --admin-token env:VAR --sub SUBJECT [--grant ID]

revoke without --grant revokes every grant of the user and disconnects the user's accounts.`

// runGrants is `mcpauth authserver grants list|revoke`.
func runGrants(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var issuer, token, sub, grant string
	var insecureHTTP bool
	fs := newFlagSet("authserver grants", "list|revoke --issuer URL --admin-token env:VAR --sub SUBJECT [flags]", grantsDescription, stderr)
	fs.StringVar(&issuer, "issuer", "", "the authorization server's issuer identifier (required)")
	fs.StringVar(&token, "admin-token", "", "env:VAR: the admin token, from $VAR (required)")
	fs.StringVar(&sub, "sub", "", "the user's subject, as in the grants' tokens (required)")
	fs.StringVar(&grant, "grant", "", "with revoke: only this grant ID")
	fs.BoolVar(&insecureHTTP, "insecure-http", false, "allow a plain-http issuer on a loopback host")
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	verb := pos[0]
	if verb != "list" && verb != "revoke" || issuer == "" || sub == "" || token == "" || (grant != "" && verb != "revoke") {
		fs.Usage()
		return errUsage
	}
	if err := checkServiceURL("--issuer", issuer, insecureHTTP); err != nil {
		return err
	}
	tok, err := envSecret("--admin-token", token, os.Getenv)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(issuer, "/")
	var req *http.Request
	if verb == "list" {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/admin/grants?"+url.Values{"sub": {sub}}.Encode(), nil)
	} else {
		body, _ := json.Marshal(map[string]string{"sub": sub, "grant_id": grant})
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+"/admin/grants/revoke", bytes.NewReader(body))
	}
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(body, &e)
		return fmt.Errorf("admin API: %s: %s %s", resp.Status, e.Error, e.Description)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		return errors.New("admin API: the answer is not JSON")
	}
	out.WriteByte('\n')
	_, err = stdout.Write(out.Bytes())
	return err
}
