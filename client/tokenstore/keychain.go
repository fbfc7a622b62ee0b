package tokenstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/zalando/go-keyring"

	"github.com/mcpauth/mcpauth/internal/jsonx"
)

// Keyring is the operating system's credential store as [Keychain] uses
// it: secrets, each a short string, under a service name and a user name.
// Get returns [ErrNotFound] for a missing secret; Delete of a missing one
// is not an error. [OSKeyring] is the real one.
type Keyring interface {
	Get(service, user string) (string, error)
	Set(service, user, secret string) error
	Delete(service, user string) error
}

// OSKeyring returns the operating system's credential store, through
// github.com/zalando/go-keyring: the login keychain on macOS (the
// security command), the Credential Manager on Windows, and the Secret
// Service (GNOME Keyring, KWallet) over D-Bus on Linux and the BSDs.
func OSKeyring() Keyring { return osKeyring{} }

type osKeyring struct{}

func (osKeyring) Get(service, user string) (string, error) {
	s, err := keyring.Get(service, user)
	if errors.Is(err, keyring.ErrNotFound) {
		return "", ErrNotFound
	}
	return s, err
}

func (osKeyring) Set(service, user, secret string) error { return keyring.Set(service, user, secret) }

func (osKeyring) Delete(service, user string) error {
	if err := keyring.Delete(service, user); err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return err
	}
	return nil
}

// DefaultKeychainService is the service name of [Keychain]'s secrets
// when [KeychainConfig.Service] is empty.
const DefaultKeychainService = "mcpauth"

// keychainChunk is the most a Keychain puts in one secret: the Windows
// Credential Manager holds at most 2560 bytes per credential, and
// go-keyring's macOS keychain at most some 3000 bytes of service, user
// and base64 of the secret together; the Secret Service has no such
// limit but slows down on large secrets. 1800 fits all three.
const keychainChunk = 1800

// maxKeychainChunks bounds what a Keychain reads: the document is at
// most 16 MiB, like the file store's.
const maxKeychainChunks = (maxFileSize*4/3)/keychainChunk + 1

// KeychainConfig configures [NewKeychain].
type KeychainConfig struct {
	// Service is the service name of the secrets. Empty means
	// [DefaultKeychainService]. Two stores with different services are
	// independent.
	Service string
	// Dir is the directory of the lock files and of the generation stamp
	// (no secret: the number of the last update), created with mode 0700.
	// Required. Processes that share the secrets must share Dir.
	Dir string
	// Keyring is the credential store. Nil means [OSKeyring].
	Keyring Keyring
}

// Keychain is a [Store] kept in the operating system's credential store
// (see [OSKeyring]) instead of a file: tokens, registrations and
// discovery results are one document, gzip-compressed, base64-encoded
// and split into secrets of at most 1800 bytes ("data.G.N"), named by an
// index secret ("index") that holds the generation G, the count and the
// SHA-256 of the whole.
//
// It gives the guarantees of [File]:
//
//   - every update holds an exclusive lock on a lock file in Dir (the
//     same github.com/gofrs/flock locks as File), so a read-modify-write
//     never loses another process's update;
//   - an update writes the new generation's secrets first, then the
//     index, then deletes the previous generation's, so a reader sees the
//     old document or the new one, never a mix (a reader that finds a
//     secret of its generation gone reads the index again);
//   - a read reuses the last document while the generation stamp in Dir
//     is unchanged, so the hot path of a request costs one stat, not a
//     round trip to the credential store;
//   - [Locker] takes one lock file per token key in Dir.
//
// An update interrupted between the index and the deletions leaves the
// previous generation's secrets behind until the next update overwrites
// them. Construct it with [NewKeychain]; it is safe for concurrent use.
type Keychain struct {
	service string
	dir     string
	ring    Keyring
	mu      sync.Mutex // serializes this process's updates before the lock

	cacheMu sync.Mutex
	cached  *fileDoc
	cacheFI os.FileInfo // the stamp the cached document belongs to
}

var (
	_ Store  = (*Keychain)(nil)
	_ Locker = (*Keychain)(nil)
)

// NewKeychain returns a store in the credential store of cfg. It does no
// I/O; [Keychain.Available] probes the credential store.
func NewKeychain(cfg KeychainConfig) (*Keychain, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: KeychainConfig.Dir is required", ErrInvalid)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	k := &Keychain{service: cfg.Service, dir: dir, ring: cfg.Keyring}
	if k.service == "" {
		k.service = DefaultKeychainService
	}
	if k.ring == nil {
		k.ring = OSKeyring()
	}
	return k, nil
}

// Available reports whether the credential store answers: it reads the
// index secret. The error says why not (no D-Bus session or Secret
// Service, a locked keyring, an unsupported platform).
func (k *Keychain) Available(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := k.ring.Get(k.service, "index")
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// keychainIndex is the index secret.
type keychainIndex struct {
	Version    int    `json:"v"`
	Generation uint64 `json:"gen"`
	Chunks     int    `json:"n"`
	SHA256     string `json:"sha256"`
}

// Token implements [Store].
func (k *Keychain) Token(ctx context.Context, key Key) (*Token, error) {
	return find(ctx, k.current, func(d *fileDoc) (*Token, bool) { return d.token(key) })
}

// PutToken implements [Store].
func (k *Keychain) PutToken(ctx context.Context, key Key, t *Token) error {
	if err := checkKey(key, t); err != nil {
		return err
	}
	return k.update(ctx, func(d *fileDoc) { d.putToken(key, t) })
}

// DeleteToken implements [Store].
func (k *Keychain) DeleteToken(ctx context.Context, key Key) error {
	return k.update(ctx, func(d *fileDoc) { d.deleteToken(key) })
}

// Registration implements [Store].
func (k *Keychain) Registration(ctx context.Context, issuer string) (*Registration, error) {
	return find(ctx, k.current, func(d *fileDoc) (*Registration, bool) { return d.registration(issuer) })
}

// PutRegistration implements [Store].
func (k *Keychain) PutRegistration(ctx context.Context, r *Registration) error {
	if err := checkRegistration(r); err != nil {
		return err
	}
	return k.update(ctx, func(d *fileDoc) { d.putRegistration(r) })
}

// DeleteRegistration implements [Store].
func (k *Keychain) DeleteRegistration(ctx context.Context, issuer string) error {
	return k.update(ctx, func(d *fileDoc) { d.deleteRegistration(issuer) })
}

// Discovery implements [Store].
func (k *Keychain) Discovery(ctx context.Context, resource string) (*Discovery, error) {
	return find(ctx, k.current, func(d *fileDoc) (*Discovery, bool) { return d.discovery(resource) })
}

// PutDiscovery implements [Store].
func (k *Keychain) PutDiscovery(ctx context.Context, disc *Discovery) error {
	if err := checkDiscovery(disc); err != nil {
		return err
	}
	return k.update(ctx, func(d *fileDoc) { d.putDiscovery(disc) })
}

// Lock implements [Locker]: an exclusive lock on a lock file derived from
// key, in Dir.
func (k *Keychain) Lock(ctx context.Context, key Key) (func(), error) {
	return lockFile(ctx, docLockName(k.base(), key))
}

// base is the common prefix of the store's files in Dir.
func (k *Keychain) base() string {
	return filepath.Join(k.dir, "keychain-"+sha256Hex(k.service)[:16])
}

func (k *Keychain) stampPath() string { return k.base() + ".generation" }

// current returns the cached document while the stamp is unchanged, else
// reads the credential store.
func (k *Keychain) current() (*fileDoc, error) {
	fi, err := os.Stat(k.stampPath())
	if err == nil {
		k.cacheMu.Lock()
		d, prev := k.cached, k.cacheFI
		k.cacheMu.Unlock()
		if d != nil && prev != nil && os.SameFile(fi, prev) && fi.Size() == prev.Size() && fi.ModTime().Equal(prev.ModTime()) {
			return d, nil
		}
	}
	d, _, err := k.read()
	if err != nil {
		return nil, err
	}
	if fi != nil {
		k.remember(d, fi)
	}
	return d, nil
}

func (k *Keychain) remember(d *fileDoc, fi os.FileInfo) {
	k.cacheMu.Lock()
	k.cached, k.cacheFI = d, fi
	k.cacheMu.Unlock()
}

// read loads the document and its index; no index is an empty document.
// A secret of the index's generation that is gone (an update replaced
// it meanwhile) makes it read the index again, at most three times.
func (k *Keychain) read() (*fileDoc, keychainIndex, error) {
	var lastErr error
	for range 3 {
		raw, err := k.ring.Get(k.service, "index")
		if errors.Is(err, ErrNotFound) {
			return &fileDoc{Version: fileVersion}, keychainIndex{}, nil
		}
		if err != nil {
			return nil, keychainIndex{}, fmt.Errorf("tokenstore: keychain: %w", err)
		}
		var idx keychainIndex
		if err := jsonx.DecodeObject([]byte(raw), &idx); err != nil || idx.Version != 1 || idx.Chunks < 1 || idx.Chunks > maxKeychainChunks {
			return nil, keychainIndex{}, fmt.Errorf("%w: keychain index", ErrCorrupt)
		}
		var b bytes.Buffer
		for i := range idx.Chunks {
			c, err := k.ring.Get(k.service, chunkName(idx.Generation, i))
			if err != nil {
				lastErr = err
				break
			}
			b.WriteString(c)
		}
		if lastErr != nil {
			if errors.Is(lastErr, ErrNotFound) {
				continue
			}
			return nil, keychainIndex{}, fmt.Errorf("tokenstore: keychain: %w", lastErr)
		}
		d, err := decodeKeychain(b.Bytes(), idx.SHA256)
		return d, idx, err
	}
	return nil, keychainIndex{}, fmt.Errorf("%w: keychain secrets keep changing or are missing", ErrCorrupt)
}

func chunkName(gen uint64, i int) string {
	return "data." + strconv.FormatUint(gen, 10) + "." + strconv.Itoa(i)
}

// decodeKeychain checks and unpacks the joined secrets.
func decodeKeychain(joined []byte, sum string) (*fileDoc, error) {
	h := sha256.Sum256(joined)
	if hex.EncodeToString(h[:]) != sum {
		return nil, fmt.Errorf("%w: keychain document checksum", ErrCorrupt)
	}
	packed, err := base64.RawURLEncoding.DecodeString(string(joined))
	if err != nil {
		return nil, fmt.Errorf("%w: keychain document encoding", ErrCorrupt)
	}
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		return nil, fmt.Errorf("%w: keychain document compression", ErrCorrupt)
	}
	data, err := io.ReadAll(io.LimitReader(zr, maxFileSize+1))
	if err != nil || len(data) > maxFileSize {
		return nil, fmt.Errorf("%w: keychain document too large or damaged", ErrCorrupt)
	}
	d := &fileDoc{Version: fileVersion}
	if err := jsonx.DecodeObject(data, d); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if d.Version != fileVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorrupt, d.Version)
	}
	return d, nil
}

// encodeKeychain packs d into the secrets' text and its checksum.
func encodeKeychain(d *fileDoc) (string, string, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return "", "", err
	}
	var packed bytes.Buffer
	zw := gzip.NewWriter(&packed)
	if _, err := zw.Write(data); err != nil {
		return "", "", err
	}
	if err := zw.Close(); err != nil {
		return "", "", err
	}
	text := base64.RawURLEncoding.EncodeToString(packed.Bytes())
	h := sha256.Sum256([]byte(text))
	return text, hex.EncodeToString(h[:]), nil
}

// update runs fn on the current document under the store's lock and
// writes the next generation.
func (k *Keychain) update(ctx context.Context, fn func(*fileDoc)) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, k.base()+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	d, old, err := k.read() // a private copy: readers may hold the cached one
	if err != nil {
		return err
	}
	fn(d)
	d.Version = fileVersion
	text, sum, err := encodeKeychain(d)
	if err != nil {
		return err
	}
	if len(text) > maxFileSize {
		return fmt.Errorf("%w: document larger than %d bytes", ErrInvalid, maxFileSize)
	}
	next := keychainIndex{Version: 1, Generation: old.Generation + 1, SHA256: sum}
	for i := 0; i*keychainChunk < len(text); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := text[i*keychainChunk : min(len(text), (i+1)*keychainChunk)]
		if err := k.ring.Set(k.service, chunkName(next.Generation, i), chunk); err != nil {
			return fmt.Errorf("tokenstore: keychain: %w", err)
		}
		next.Chunks = i + 1
	}
	idx, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if err := k.ring.Set(k.service, "index", string(idx)); err != nil {
		return fmt.Errorf("tokenstore: keychain: %w", err)
	}
	for i := range old.Chunks {
		_ = k.ring.Delete(k.service, chunkName(old.Generation, i)) // a leftover is overwritten later
	}
	return k.stamp(ctx, next.Generation, d)
}

// stamp writes the generation stamp, atomically, and caches d under it.
func (k *Keychain) stamp(ctx context.Context, gen uint64, d *fileDoc) error {
	tmp, err := os.CreateTemp(k.dir, ".keychain-stamp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := tmp.WriteString(strconv.FormatUint(gen, 10) + "\n")
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(name)
		return err
	}
	if err := replaceFile(ctx, name, k.stampPath()); err != nil {
		os.Remove(name)
		return err
	}
	if fi, err := os.Stat(k.stampPath()); err == nil {
		k.remember(d, fi)
	}
	return nil
}
