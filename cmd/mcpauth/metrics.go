package main

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpauth/mcpauth/resource"
)

// proxyMetrics are the Prometheus metrics of `mcpauth protect`, on their
// own registry (no global state):
//
//	mcpauth_protect_decisions_total{decision,reason}         one per authorization decision
//	mcpauth_protect_request_duration_seconds{decision}       whole requests, by decision
//	mcpauth_protect_upstream_duration_seconds{code}          upstream time to response headers
//	mcpauth_protect_upstream_errors_total                    upstream requests that failed
//
// Labels carry only fixed values (decisions, the library's fixed reason
// strings, status classes), never anything a caller chose.
type proxyMetrics struct {
	registry       *prometheus.Registry
	decisions      *prometheus.CounterVec
	requests       *prometheus.HistogramVec
	upstream       *prometheus.HistogramVec
	upstreamErrors prometheus.Counter
}

func newProxyMetrics() *proxyMetrics {
	m := &proxyMetrics{
		registry: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpauth_protect_decisions_total",
			Help: "Authorization decisions by outcome (allow, deny, step_up) and reason.",
		}, []string{"decision", "reason"}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpauth_protect_request_duration_seconds",
			Help:    "Time to serve requests to the protected endpoint, by authorization decision (none: metadata and other paths).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"decision"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpauth_protect_upstream_duration_seconds",
			Help:    "Time until the upstream MCP server's response headers, by status class.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"code"}),
		upstreamErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpauth_protect_upstream_errors_total",
			Help: "Upstream requests that failed without a response.",
		}),
	}
	m.registry.MustRegister(m.decisions, m.requests, m.upstream, m.upstreamErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *proxyMetrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// decisionKey carries a request's *decisionNote through the middleware.
type decisionKey struct{}

type decisionNote struct{ decision string }

// audit is the resource.Config.Audit hook: it counts the decision and notes
// it for the request's latency observation. Passthrough events have no
// request of their own and are only counted.
func (m *proxyMetrics) audit(ctx context.Context, e resource.Event) {
	reason := e.Reason
	if reason == "" {
		reason = "ok"
	}
	m.decisions.WithLabelValues(string(e.Decision), reason).Inc()
	if n, ok := ctx.Value(decisionKey{}).(*decisionNote); ok && e.Decision != resource.DecisionPassthroughBlocked {
		n.decision = string(e.Decision)
	}
}

// instrument times every request and labels it with the decision the
// middleware recorded.
func (m *proxyMetrics) instrument(next http.Handler, now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		note := &decisionNote{decision: "none"}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), decisionKey{}, note)))
		m.requests.WithLabelValues(note.decision).Observe(now().Sub(start).Seconds())
	})
}

// timedTransport observes the upstream's time to response headers.
type timedTransport struct {
	base http.RoundTripper
	m    *proxyMetrics
	now  func() time.Time
}

func (t *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := t.now()
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		t.m.upstreamErrors.Inc()
		return nil, err
	}
	t.m.upstream.WithLabelValues(strconv.Itoa(resp.StatusCode/100) + "xx").Observe(t.now().Sub(start).Seconds())
	return resp, nil
}
