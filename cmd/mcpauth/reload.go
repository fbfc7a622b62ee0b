package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
)

// A long-running command serves through a liveHandler: a reload builds a
// whole new generation (configuration, handler, readiness checks) from
// the new settings and swaps it in at once, so a request is served by one
// generation from start to end, never by a half-applied configuration.
// The old generation is closed when its last request has finished.

// generation is one configuration's handler, its readiness checks and
// what closes it.
type generation struct {
	handler http.Handler
	checks  []healthCheck
	close   func()

	refs      atomic.Int64
	retired   atomic.Bool
	closeOnce sync.Once
}

func (g *generation) release() {
	if g.refs.Add(-1) == 0 && g.retired.Load() {
		g.closeOnce.Do(g.close)
	}
}

func (g *generation) retire() {
	g.retired.Store(true)
	if g.refs.Load() == 0 {
		g.closeOnce.Do(g.close)
	}
}

// liveHandler serves the current generation.
type liveHandler struct{ cur atomic.Pointer[generation] }

// newLiveHandler starts with g.
func newLiveHandler(g *generation) *liveHandler {
	l := &liveHandler{}
	l.cur.Store(g)
	return l
}

// acquire returns the current generation, held until release.
func (l *liveHandler) acquire() *generation {
	for {
		g := l.cur.Load()
		g.refs.Add(1)
		if !g.retired.Load() {
			return g
		}
		g.release() // swapped out meanwhile: take the new one
	}
}

func (l *liveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := l.acquire()
	defer g.release()
	g.handler.ServeHTTP(w, r)
}

// swap makes g current and retires the previous generation.
func (l *liveHandler) swap(g *generation) {
	l.cur.Swap(g).retire()
}

// Close retires the current generation; requests in flight finish first.
func (l *liveHandler) Close() { l.cur.Load().retire() }

// reloadSignals returns the channel SIGHUP is delivered on and the
// function that stops the delivery.
func reloadSignals() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	return c, func() { signal.Stop(c) }
}

// onSignal calls reload for each signal on hup until ctx ends; the
// returned function waits for a reload in progress to end.
func onSignal(ctx context.Context, hup <-chan os.Signal, reload func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload()
			}
		}
	}()
	return func() { <-done }
}

// reloadPlan compares the configuration a reload read with the running
// one: it re-parses with the restart-only keys kept as they run, and
// returns the new flags and view and the keys the reload applies; ok is
// false (and the reason logged) when there is nothing to apply or the new
// configuration is invalid, so the running one stays.
func reloadPlan[F any](logger *slog.Logger, running *configView, reloadable func(string) bool,
	parse func(pinned map[string]*setting) (F, *configView, error)) (f F, view *configView, applied []string, ok bool) {
	f, view, err := parse(nil)
	if err != nil {
		logger.Error("configuration not reloaded: the new one is invalid; the running one stays", "err", err)
		return f, nil, nil, false
	}
	var restart []string
	pinned := map[string]*setting{}
	for _, s := range running.keys {
		n := view.byName[s.name]
		if n == nil || s.equal(n) {
			continue
		}
		if reloadable(s.name) {
			applied = append(applied, s.name)
		} else {
			restart = append(restart, s.name)
			pinned[s.name] = s
		}
	}
	if len(restart) > 0 {
		logger.Warn("configuration keys changed that take effect only at a restart; they keep their running values", "keys", restart)
		if f, view, err = parse(pinned); err != nil {
			logger.Error("configuration not reloaded: the new one is invalid; the running one stays", "err", err)
			return f, nil, nil, false
		}
	}
	if len(applied) == 0 {
		logger.Info("configuration read again: no key a reload applies has changed")
		return f, nil, nil, false
	}
	slices.Sort(applied)
	return f, view, applied, true
}
