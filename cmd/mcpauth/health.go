package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Health endpoints of the long-running commands: /healthz answers 200
// while the process serves; /readyz runs the current generation's checks
// (storage, Redis, identity provider, key sets) and answers 200 when all
// pass, 503 otherwise. Both answer only check names and ok or fail: the
// reasons (which may name hosts, databases or configuration) go to the
// log, never to the caller.

const (
	pathHealthz = "/healthz"
	pathReadyz  = "/readyz"
	// readyCheckTimeout bounds each readiness check.
	readyCheckTimeout = 3 * time.Second
	// readyCacheFor is how long a readiness answer is reused, so a flood
	// of probes costs one round of checks per interval.
	readyCacheFor = time.Second
)

// healthCheck is one named readiness check.
type healthCheck struct {
	name  string
	check func(ctx context.Context) error
}

// health serves /healthz and /readyz for the generations of live.
type health struct {
	live   *liveHandler
	logger *slog.Logger
	now    func() time.Time

	mu     sync.Mutex
	at     time.Time
	status int
	body   []byte
}

// healthReport is the body of both endpoints.
type healthReport struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}

// mount adds the endpoints to mux.
func (h *health) mount(mux *http.ServeMux) {
	mux.HandleFunc("GET "+pathHealthz, func(w http.ResponseWriter, r *http.Request) {
		writeHealth(w, http.StatusOK, mustJSON(healthReport{Status: "ok"}))
	})
	mux.HandleFunc("GET "+pathReadyz, func(w http.ResponseWriter, r *http.Request) {
		status, body := h.ready(r.Context())
		writeHealth(w, status, body)
	})
}

// withHealth serves the endpoints in front of next, for the main
// listener; every other request goes to next untouched (no path cleaning
// or redirects of a ServeMux in between).
func (h *health) withHealth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			switch r.URL.Path {
			case pathHealthz:
				writeHealth(w, http.StatusOK, mustJSON(healthReport{Status: "ok"}))
				return
			case pathReadyz:
				status, body := h.ready(r.Context())
				writeHealth(w, status, body)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ready runs the checks, or reuses an answer younger than readyCacheFor.
func (h *health) ready(ctx context.Context) (int, []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if h.body != nil && now.Sub(h.at) < readyCacheFor && !now.Before(h.at) {
		return h.status, h.body
	}
	g := h.live.acquire()
	defer g.release()
	report := healthReport{Status: "ok", Checks: map[string]string{}}
	for _, c := range g.checks {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyCheckTimeout)
		err := c.check(cctx)
		cancel()
		if err != nil {
			report.Status, report.Checks[c.name] = "fail", "fail"
			h.logger.Warn("readiness check failed", "check", c.name, "err", err)
			continue
		}
		report.Checks[c.name] = "ok"
	}
	h.status = http.StatusOK
	if report.Status != "ok" {
		h.status = http.StatusServiceUnavailable
	}
	h.at, h.body = now, mustJSON(report)
	return h.status, h.body
}

func writeHealth(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v) // a healthReport always encodes
	return append(b, '\n')
}
