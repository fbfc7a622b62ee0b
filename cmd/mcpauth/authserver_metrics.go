package main

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpauth/mcpauth/authserver"
)

// asMetrics are the Prometheus metrics of `mcpauth authserver`, on their
// own registry (no global state), fed by authserver.Config.Observer:
//
//	mcpauth_authserver_grants_total{grant_type,outcome}         token requests by grant type and outcome
//	mcpauth_authserver_refusals_total{endpoint,reason}          refused requests by RFC 6749 error code (or rate_limited)
//	mcpauth_authserver_request_duration_seconds{endpoint}       time to answer, by endpoint
//	mcpauth_authserver_internal_errors_total{endpoint}          failures of the server's side: storage, mostly
//	mcpauth_authserver_upstream_logins_total{outcome}           upstream login callbacks by outcome
//
// Labels carry only fixed values (the server's endpoints and grant types,
// RFC error codes), never anything a caller chose.
type asMetrics struct {
	registry  *prometheus.Registry
	grants    *prometheus.CounterVec
	refusals  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	internal  *prometheus.CounterVec
	logins    *prometheus.CounterVec
}

func newASMetrics() *asMetrics {
	m := &asMetrics{
		registry: prometheus.NewRegistry(),
		grants: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpauth_authserver_grants_total",
			Help: "Token requests by grant type (unknown: missing or not offered) and outcome (ok, rate_limited or the RFC 6749 error code).",
		}, []string{"grant_type", "outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpauth_authserver_refusals_total",
			Help: "Refused requests at the token, introspection, revocation and registration endpoints and the upstream login callback, by error code.",
		}, []string{"endpoint", "reason"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpauth_authserver_request_duration_seconds",
			Help:    "Time to answer, by endpoint.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"endpoint"}),
		internal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpauth_authserver_internal_errors_total",
			Help: "Requests that failed on the server's side (storage or another internal error; logged), by endpoint.",
		}, []string{"endpoint"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpauth_authserver_upstream_logins_total",
			Help: "Upstream login callbacks by outcome (ok or the error code sent to the client).",
		}, []string{"outcome"}),
	}
	m.registry.MustRegister(m.grants, m.refusals, m.durations, m.internal, m.logins,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *asMetrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Observe implements authserver.Observer.
func (m *asMetrics) Observe(_ context.Context, e authserver.Event) {
	m.durations.WithLabelValues(e.Endpoint).Observe(e.Duration.Seconds())
	if e.Outcome != authserver.OutcomeOK {
		m.refusals.WithLabelValues(e.Endpoint, e.Outcome).Inc()
	}
	if e.Internal {
		m.internal.WithLabelValues(e.Endpoint).Inc()
	}
	switch e.Endpoint {
	case authserver.EndpointToken:
		gt := e.GrantType
		if gt == "" {
			gt = "unknown"
		}
		m.grants.WithLabelValues(gt, e.Outcome).Inc()
	case authserver.EndpointUpstreamCallback:
		m.logins.WithLabelValues(e.Outcome).Inc()
	}
}

// asObserveFlags are the authserver's observability flags.
type asObserveFlags struct {
	metricsAddr string
}

func (o *asObserveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus /metrics on this address (default: off)")
}

// observability is what a command serves and stops besides its main
// listener: the metrics listener and the trace exporter.
type observability struct {
	servers   []*http.Server
	listeners []net.Listener
	metrics   string // the /metrics URL, "" when off
	stop      []func()
}

func (o *observability) close() {
	for _, f := range slices.Backward(o.stop) {
		f()
	}
}

// start applies the flags and the OTEL_* environment to cfg: the metrics
// observer and its listener, and the tracer provider.
func (o *asObserveFlags) start(ctx context.Context, cfg *authserver.Config, logger *slog.Logger) (*observability, error) {
	obs := &observability{}
	tp, stop, err := startTracing(ctx, "mcpauth-authserver", logger)
	if err != nil {
		return nil, err
	}
	obs.stop = append(obs.stop, stop)
	if tp != nil {
		cfg.TracerProvider = tp
	}
	if o.metricsAddr == "" {
		return obs, nil
	}
	m := newASMetrics()
	mln, err := listen("--metrics-addr", o.metricsAddr)
	if err != nil {
		obs.close()
		return nil, err
	}
	obs.stop = append(obs.stop, func() { _ = mln.Close() })
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	cfg.Observer = m
	obs.servers, obs.listeners = []*http.Server{streamingServer(mux, logger)}, []net.Listener{mln}
	obs.metrics = "http://" + mln.Addr().String() + "/metrics"
	return obs, nil
}
