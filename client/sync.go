package client

import (
	"context"
	"sync"

	"github.com/mcpauth/mcpauth/client/tokenstore"
)

// inflight de-duplicates concurrent refreshes of one token: the first
// caller performs it, the others wait for its result.
type inflight struct {
	mu sync.Mutex
	m  map[tokenstore.Key]*refreshCall
}

type refreshCall struct {
	done chan struct{}
	tok  *tokenstore.Token
	err  error
}

func newInflight() *inflight { return &inflight{m: make(map[tokenstore.Key]*refreshCall)} }

// do runs fn once for all concurrent callers with the same key. A waiter
// gives up when its own ctx ends; the call itself continues for the
// others.
func (f *inflight) do(ctx context.Context, key tokenstore.Key, fn func() (*tokenstore.Token, error)) (*tokenstore.Token, error) {
	f.mu.Lock()
	if cl, ok := f.m[key]; ok {
		f.mu.Unlock()
		select {
		case <-cl.done:
			return cl.tok.Clone(), cl.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	cl := &refreshCall{done: make(chan struct{})}
	f.m[key] = cl
	f.mu.Unlock()

	cl.tok, cl.err = fn()

	f.mu.Lock()
	delete(f.m, key)
	f.mu.Unlock()
	close(cl.done)
	return cl.tok.Clone(), cl.err
}

// keyedMutex serializes interactive logins per MCP server, so concurrent
// requests that all get a 401 start one authorization, not several.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	sem  chan struct{}
	refs int
}

func newKeyedMutex() *keyedMutex { return &keyedMutex{m: make(map[string]*keyedEntry)} }

// lock acquires the mutex for key or returns ctx's error.
func (k *keyedMutex) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	e, ok := k.m[key]
	if !ok {
		e = &keyedEntry{sem: make(chan struct{}, 1)}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()

	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		k.release(key, e)
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-e.sem
			k.release(key, e)
		})
	}, nil
}

func (k *keyedMutex) release(key string, e *keyedEntry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e.refs--
	if e.refs == 0 {
		delete(k.m, key)
	}
}
