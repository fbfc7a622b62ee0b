package tokenstore

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// The operations of [Store] on the document that [File] and [Keychain]
// both keep: each store reads the document and runs these, or runs them
// under its lock and writes the result.

func (d *fileDoc) token(k Key) (*Token, bool) {
	e, ok := firstOf(d.Tokens, func(e tokenEntry) bool { return e.Key == k })
	return e.Token, ok && e.Token != nil
}

func (d *fileDoc) putToken(k Key, t *Token) {
	d.deleteToken(k)
	d.Tokens = append(d.Tokens, tokenEntry{Key: k, Token: t.Clone()})
}

func (d *fileDoc) deleteToken(k Key) {
	d.Tokens = slices.DeleteFunc(d.Tokens, func(e tokenEntry) bool { return e.Key == k })
}

func (d *fileDoc) registration(issuer string) (*Registration, bool) {
	return firstOf(d.Registrations, func(r *Registration) bool { return r != nil && r.Issuer == issuer })
}

func (d *fileDoc) putRegistration(r *Registration) {
	d.deleteRegistration(r.Issuer)
	d.Registrations = append(d.Registrations, r.Clone())
}

func (d *fileDoc) deleteRegistration(issuer string) {
	d.Registrations = slices.DeleteFunc(d.Registrations, func(x *Registration) bool { return x == nil || x.Issuer == issuer })
}

func (d *fileDoc) discovery(resource string) (*Discovery, bool) {
	return firstOf(d.Discoveries, func(x *Discovery) bool { return x != nil && x.Resource == resource })
}

func (d *fileDoc) putDiscovery(disc *Discovery) {
	d.Discoveries = slices.DeleteFunc(d.Discoveries, func(x *Discovery) bool { return x == nil || x.Resource == disc.Resource })
	d.Discoveries = append(d.Discoveries, disc.Clone())
}

// checkRegistration and checkDiscovery refuse what cannot be stored.
func checkRegistration(r *Registration) error {
	if r == nil || r.Issuer == "" || r.ClientID == "" {
		return ErrInvalid
	}
	return nil
}

func checkDiscovery(d *Discovery) error {
	if d == nil || d.Resource == "" || d.Issuer == "" {
		return ErrInvalid
	}
	return nil
}

// docLockName is the lock file of the per-key [Locker] lock for k, next
// to base.
func docLockName(base string, k Key) string {
	sum := sha256Hex(k.Issuer + "\x00" + k.Resource + "\x00" + k.ClientID)
	return base + ".k-" + sum[:24] + ".lock"
}

// sha256Hex is the hex SHA-256 of s.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
