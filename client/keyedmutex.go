package client

import (
	"context"
	"sync"
)

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
	return sync.OnceFunc(func() {
		<-e.sem
		k.release(key, e)
	}), nil
}

func (k *keyedMutex) release(key string, e *keyedEntry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e.refs--
	if e.refs == 0 {
		delete(k.m, key)
	}
}
