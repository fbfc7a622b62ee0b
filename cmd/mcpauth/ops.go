package main

import (
	"flag"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// opsFlags are the operational flags authserver and protect share: the
// configuration file, TLS on the main listener and the admin listener.
type opsFlags struct {
	configFile      string
	printConfig     bool
	tlsCert, tlsKey string
	adminAddr       string
	view            *configView // the effective configuration, after parsing
}

func (o *opsFlags) register(fs *flag.FlagSet) {
	registerConfigFlags(fs, &o.configFile, &o.printConfig)
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with the PEM certificate chain in this `FILE` (with --tls-key); "+
		"a new pair in the files is used without a restart (checked every minute and on SIGHUP)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "the PEM private key `FILE` of --tls-cert")
	fs.StringVar(&o.adminAddr, "admin-addr", "", "serve /healthz and /readyz on this address (plain HTTP) instead of on the main listener")
}

// opsKeys are the keys of opsFlags, all restart-only (the certificate
// files named are read again, not the names).
var opsKeys = []string{"tls-cert", "tls-key", "admin-addr"}

// served is what the operational flags add to a command's main server:
// the health endpoints (on it or on the admin listener) and TLS.
type served struct {
	servers   []*http.Server
	listeners []net.Listener
	certs     *certReloader
	ticker    *time.Ticker
	scheme    string
}

// serve prepares the main server for live on ln (made by newServer) and
// the admin server: TLS when --tls-cert is given (plain HTTP only on
// loopback or with insecureHTTP), /healthz and /readyz. Close releases
// what it started.
func (o *opsFlags) serve(ln net.Listener, live *liveHandler, insecureHTTP bool, logger *slog.Logger,
	newServer func(http.Handler) *http.Server) (*served, error) {
	s := &served{scheme: "http"}
	var err error
	if s.certs, err = o.listenerTLS(ln, insecureHTTP, logger); err != nil {
		return nil, err
	}
	h := &health{live: live, logger: logger, now: time.Now}
	var main http.Handler = live
	if o.adminAddr == "" {
		main = h.withHealth(live)
	} else {
		aln, err := listen("--admin-addr", o.adminAddr)
		if err != nil {
			s.Close()
			return nil, err
		}
		mux := http.NewServeMux()
		h.mount(mux)
		asrv := streamingServer(mux, logger)
		asrv.ReadTimeout, asrv.WriteTimeout = 10*time.Second, 10*time.Second
		s.servers, s.listeners = append(s.servers, asrv), append(s.listeners, aln)
	}
	srv := newServer(main)
	if s.certs != nil {
		srv.TLSConfig = serverTLSConfig(s.certs)
		s.ticker = time.NewTicker(certCheckInterval)
		s.certs.watch(s.ticker.C)
		s.scheme = "https"
	}
	s.servers, s.listeners = append(s.servers, srv), append(s.listeners, ln)
	return s, nil
}

// reload reads the certificate files again (on SIGHUP).
func (s *served) reload() {
	if s.certs != nil {
		s.certs.check()
	}
}

// Close stops the certificate checks and closes the admin listener.
func (s *served) Close() {
	if s.ticker != nil {
		s.ticker.Stop()
	}
	if s.certs != nil {
		_ = s.certs.Close()
	}
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
}
