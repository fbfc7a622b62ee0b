package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// secretShape says where a flag's value holds a secret.
type secretShape int

const (
	notSecret    secretShape = iota
	secretWhole              // the whole value (a key, a client secret)
	secretURL                // a password inside a URL (a database or Redis URL)
	secretClient             // the secret= part of a --client spec
	secretPair               // the SECRET of ID:SECRET
	secretNamed              // the SECRET of NAME=SECRET
)

// secretFlags are the flags of authserver and protect whose values are
// secrets. A flag whose name contains "secret" or "password" is one too,
// so a new flag so named is covered without an entry here.
var secretFlags = map[string]secretShape{
	"key-encryption-key":     secretWhole,
	"old-key-encryption-key": secretWhole,
	"dpop-nonce-key":         secretWhole,
	"session-key":            secretWhole,
	"vault-key":              secretWhole,
	"database-url":           secretURL,
	"redis-url":              secretURL,
	"rate-limit-redis-url":   secretURL,
	"admin-token":            secretWhole,
	"client":                 secretClient,
	"introspect-client":      secretPair,
	"connect-client-secret":  secretNamed,
}

// secretShapeOf is the secretShape of the flag name.
func secretShapeOf(name string) secretShape {
	if s, ok := secretFlags[name]; ok {
		return s
	}
	if strings.Contains(name, "secret") || strings.Contains(name, "password") {
		return secretWhole
	}
	return notSecret
}

// isSecretRef reports whether v names a secret (env:VAR, file:PATH) rather
// than holding it.
func isSecretRef(v string) bool {
	return strings.HasPrefix(v, "env:") || strings.HasPrefix(v, "file:")
}

// errSecretInFile explains the rule a configuration file breaks.
var errSecretInFile = errors.New("a secret may not be written in the configuration file: give it as env:VAR (read from $VAR) or file:PATH (read from the file)")

// checkFileSecret refuses a secret written in the configuration file
// rather than referenced.
func checkFileSecret(name, v string) error {
	switch secretShapeOf(name) {
	case secretWhole:
		if v != "" && !isSecretRef(v) {
			return fmt.Errorf("%s: %w", name, errSecretInFile)
		}
	case secretURL:
		if !isSecretRef(v) && urlHasPassword(v) {
			return fmt.Errorf("%s: the URL holds a password; %w", name, errSecretInFile)
		}
	case secretClient:
		for _, part := range strings.Split(v, ",") {
			if s, ok := strings.CutPrefix(strings.TrimSpace(part), "secret="); ok && !isSecretRef(s) {
				return fmt.Errorf("%s: secret=: %w", name, errSecretInFile)
			}
		}
	case secretPair:
		if _, s, ok := strings.Cut(v, ":"); ok && !isSecretRef(s) {
			return fmt.Errorf("%s: the SECRET of ID:SECRET: %w", name, errSecretInFile)
		}
	case secretNamed:
		if _, s, _ := strings.Cut(v, "="); !isSecretRef(s) {
			return fmt.Errorf("%s: the SECRET of NAME=SECRET: %w", name, errSecretInFile)
		}
	}
	return nil
}

// urlHasPassword reports whether raw, a database or Redis URL, carries a
// password (in its user information or a password parameter); a value that
// is not a URL counts as one.
func urlHasPassword(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	if _, ok := u.User.Password(); ok {
		return true
	}
	return u.Query().Has("password")
}

// redacted replaces a secret in --print-config's output and in logs.
const redacted = "REDACTED"

// redactSecret returns v, the value of the flag name, with any secret it
// holds replaced by [redacted]; references (env:VAR, file:PATH) are shown.
func redactSecret(name, v string) string {
	if v == "" || isSecretRef(v) {
		return v
	}
	switch secretShapeOf(name) {
	case secretWhole:
		return redacted
	case secretURL:
		u, err := url.Parse(v)
		if err != nil {
			return redacted
		}
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", redacted)
			u.RawQuery = q.Encode()
		}
		return u.String()
	case secretClient:
		parts := strings.Split(v, ",")
		for i, part := range parts {
			if s, ok := strings.CutPrefix(strings.TrimSpace(part), "secret="); ok && !isSecretRef(s) {
				parts[i] = "secret=" + redacted
			}
		}
		return strings.Join(parts, ",")
	case secretPair:
		if id, s, ok := strings.Cut(v, ":"); ok && !isSecretRef(s) {
			return id + ":" + redacted
		}
	case secretNamed:
		n, s, ok := strings.Cut(v, "=")
		if !ok {
			return redacted
		}
		if !isSecretRef(s) {
			return n + "=" + redacted
		}
	}
	return v
}
