package tokenstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/mcpauth/mcpauth/internal/jsonx"
)

// maxFileSize bounds the store file read into memory.
const maxFileSize = 16 << 20

var errLockNotTaken = errors.New("tokenstore: lock not taken")

// lockPoll is how often a held lock is tried again; non-blocking attempts
// let the wait honour ctx.
const lockPoll = 5 * time.Millisecond

// File is a [Store] kept in one JSON file, shared safely by several
// goroutines and several processes on one machine:
//
//   - every update holds an exclusive lock on "<path>.lock" (flock(2) on
//     Unix, LockFileEx on Windows, through github.com/gofrs/flock), so a
//     read-modify-write never loses another process's update;
//   - an update writes a temporary file in the same directory (mode 0600),
//     fsyncs it and renames it over the store, so a crash leaves either the
//     old or the new file, never a torn one, and a reader needs no lock;
//   - a read reuses the last parsed document while the file is the same
//     (same inode, size and modification time), so the hot path of a
//     request costs one stat;
//   - the directory is created with mode 0700 and every file with mode
//     0600 (on Windows: a protected access control list that grants the
//     current user alone), and a store or lock file that other users can
//     read or write is refused ([ErrInsecureFile]).
//
// File also implements [Locker] with one lock file per token key, so two
// processes never refresh the same token at once.
//
// Construct it with [NewFile]. It is safe for concurrent use. It works on
// Unix (Linux, macOS, the BSDs) and Windows; on a platform without file
// locking (plan9, js/wasm, wasip1) every update fails with
// [ErrLockUnsupported].
type File struct {
	path string
	mu   sync.Mutex // serializes this process's updates before the file lock

	cacheMu sync.Mutex
	cached  *fileDoc    // the last document read or written, read-only
	cacheFI os.FileInfo // the file it came from
}

var (
	_ Store  = (*File)(nil)
	_ Locker = (*File)(nil)
)

// NewFile returns a store kept at path. It does no I/O: the directory and
// the file are created by the first update.
func NewFile(path string) (*File, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty path", ErrInvalid)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &File{path: abs}, nil
}

// Path returns the absolute path of the store file.
func (f *File) Path() string { return f.path }

// fileDoc is the on-disk document.
type fileDoc struct {
	Version       int             `json:"version"`
	Tokens        []tokenEntry    `json:"tokens,omitempty"`
	Registrations []*Registration `json:"registrations,omitempty"`
	Discoveries   []*Discovery    `json:"discoveries,omitempty"`
}

type tokenEntry struct {
	Key   Key    `json:"key"`
	Token *Token `json:"token"`
}

const fileVersion = 1

// Token implements [Store].
func (f *File) Token(ctx context.Context, k Key) (*Token, error) {
	return find(ctx, f.current, func(d *fileDoc) (*Token, bool) { return d.token(k) })
}

// PutToken implements [Store].
func (f *File) PutToken(ctx context.Context, k Key, t *Token) error {
	if err := checkKey(k, t); err != nil {
		return err
	}
	return f.update(ctx, func(d *fileDoc) { d.putToken(k, t) })
}

// DeleteToken implements [Store].
func (f *File) DeleteToken(ctx context.Context, k Key) error {
	return f.update(ctx, func(d *fileDoc) { d.deleteToken(k) })
}

// Registration implements [Store].
func (f *File) Registration(ctx context.Context, issuer string) (*Registration, error) {
	return find(ctx, f.current, func(d *fileDoc) (*Registration, bool) { return d.registration(issuer) })
}

// PutRegistration implements [Store].
func (f *File) PutRegistration(ctx context.Context, r *Registration) error {
	if err := checkRegistration(r); err != nil {
		return err
	}
	return f.update(ctx, func(d *fileDoc) { d.putRegistration(r) })
}

// DeleteRegistration implements [Store].
func (f *File) DeleteRegistration(ctx context.Context, issuer string) error {
	return f.update(ctx, func(d *fileDoc) { d.deleteRegistration(issuer) })
}

// Discovery implements [Store].
func (f *File) Discovery(ctx context.Context, resource string) (*Discovery, error) {
	return find(ctx, f.current, func(d *fileDoc) (*Discovery, bool) { return d.discovery(resource) })
}

// PutDiscovery implements [Store].
func (f *File) PutDiscovery(ctx context.Context, disc *Discovery) error {
	if err := checkDiscovery(disc); err != nil {
		return err
	}
	return f.update(ctx, func(d *fileDoc) { d.putDiscovery(disc) })
}

// Lock implements [Locker]: an exclusive lock on a lock file derived from
// k, next to the store file.
func (f *File) Lock(ctx context.Context, k Key) (func(), error) {
	return lockFile(ctx, docLockName(f.path, k))
}

// find returns a copy of the entry pick chooses from the current document,
// or ErrNotFound. Updates replace the file atomically, so no lock is
// needed.
func find[V cloner[V]](ctx context.Context, current func() (*fileDoc, error), pick func(*fileDoc) (V, bool)) (V, error) {
	var zero V
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	d, err := current()
	if err != nil {
		return zero, err
	}
	if v, ok := pick(d); ok {
		return v.Clone(), nil
	}
	return zero, ErrNotFound
}

// firstOf returns the first element of s that match accepts.
func firstOf[E any](s []E, match func(E) bool) (E, bool) {
	if i := slices.IndexFunc(s, match); i >= 0 {
		return s[i], true
	}
	var zero E
	return zero, false
}

// current returns the cached document if the file did not change since it
// was read, else reads it.
func (f *File) current() (*fileDoc, error) {
	fi, err := os.Stat(f.path)
	if err == nil {
		f.cacheMu.Lock()
		d, prev := f.cached, f.cacheFI
		f.cacheMu.Unlock()
		if d != nil && prev != nil && os.SameFile(fi, prev) && fi.Size() == prev.Size() && fi.ModTime().Equal(prev.ModTime()) &&
			fi.Mode() == prev.Mode() {
			return d, nil
		}
	}
	return f.read(true)
}

// update runs fn on the current document under an exclusive lock and
// writes the result atomically.
func (f *File) update(ctx context.Context, fn func(*fileDoc)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	unlock, err := lockFile(ctx, f.path+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	d, err := f.read(false) // a private copy: readers may hold the cached one
	if err != nil {
		return err
	}
	fn(d)
	d.Version = fileVersion
	return f.write(ctx, d)
}

// lockFile takes an exclusive lock on the file name, creating it private
// (see [createPrivate]) if it does not exist and refusing it if other users
// may use it, and waits until the lock is free or ctx is done.
func lockFile(ctx context.Context, name string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return nil, err
	}
	lf, err := createPrivate(name)
	if err != nil {
		return nil, err
	}
	_, err = checkPrivate(lf)
	lf.Close()
	if err != nil {
		return nil, err
	}
	fl := flock.New(name, flock.SetPermissions(0o600))
	ok, err := fl.TryLockContext(ctx, lockPoll)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, fmt.Errorf("%w: %w", ErrLockUnsupported, err)
	}
	if err != nil {
		return nil, err
	}
	if !ok { // TryLockContext reports a done ctx as its error
		return nil, errors.Join(errLockNotTaken, ctx.Err())
	}
	return sync.OnceFunc(func() { _ = fl.Unlock() }), nil
}

// createPrivate opens name, creating it with mode 0600 (on Windows, with
// an access control list that grants the current user alone) if it does
// not exist. An existing file is opened as it is, for reading.
func createPrivate(name string) (*os.File, error) {
	file, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return os.Open(name)
	}
	if err != nil {
		return nil, err
	}
	if err := makePrivate(file); err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

// read loads the document; a missing file is an empty document. With
// cache set, the result becomes the cached document and must not be
// modified.
func (f *File) read(cache bool) (*fileDoc, error) {
	file, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &fileDoc{Version: fileVersion}, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	fi, err := checkPrivate(file)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(file, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrCorrupt, maxFileSize)
	}
	d := &fileDoc{Version: fileVersion}
	if len(bytes.TrimSpace(data)) == 0 {
		return d, nil
	}
	if err := jsonx.DecodeObject(data, d); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if d.Version != fileVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorrupt, d.Version)
	}
	d.Tokens = slices.DeleteFunc(d.Tokens, func(e tokenEntry) bool { return e.Token == nil })
	if cache {
		f.remember(d, fi)
	}
	return d, nil
}

func (f *File) remember(d *fileDoc, fi os.FileInfo) {
	f.cacheMu.Lock()
	f.cached, f.cacheFI = d, fi
	f.cacheMu.Unlock()
}

// write replaces the store file atomically.
func (f *File) write(ctx context.Context, d *fileDoc) error {
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(f.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".tmp-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if err := makePrivate(tmp); err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	fi, err := tmp.Stat()
	if err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := replaceFile(ctx, tmpName, f.path); err != nil {
		return err
	}
	ok = true
	syncDir(dir)
	f.remember(d, fi) // same inode after the rename; d is no longer modified
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
