package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// certCheckInterval is how often the certificate files are checked for a
// new pair, besides on SIGHUP.
const certCheckInterval = time.Minute

// maxCertFile bounds a certificate or key file.
const maxCertFile = 1 << 20

// serverTLSConfig is the listener's TLS configuration: TLS 1.2 at least
// (1.3 is preferred, as Go negotiates the highest both sides have), for
// TLS 1.2 only ECDHE key exchanges with AEAD ciphers, and the certificate
// of certs, read again when its files change.
func serverTLSConfig(certs *certReloader) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		CipherSuites: []uint16{ // TLS 1.2; TLS 1.3's suites are not configurable and all strong
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
		GetCertificate: certs.getCertificate,
	}
}

// certReloader holds the certificate and key of --tls-cert and --tls-key,
// and reads them again when the files change: on reload (SIGHUP) and on
// each tick of watch. A pair that does not load (a file half-written, a
// key that does not match) leaves the one in use and is logged.
type certReloader struct {
	certFile, keyFile string
	logger            *slog.Logger

	cur      atomic.Pointer[tls.Certificate]
	mu       sync.Mutex // serialises reloads
	certPEM  []byte
	keyPEM   []byte
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// loadCertReloader reads the pair once; it fails when the pair does not
// load. Call watch to check the files periodically, and Close.
func loadCertReloader(certFile, keyFile string, logger *slog.Logger) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile, logger: logger}
	if _, err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// reload reads both files and, when either changed, loads the new pair;
// it reports whether the certificate in use changed.
func (c *certReloader) reload() (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	certPEM, err := readBounded("--tls-cert", c.certFile)
	if err != nil {
		return false, err
	}
	keyPEM, err := readBounded("--tls-key", c.keyFile)
	if err != nil {
		return false, err
	}
	if c.cur.Load() != nil && bytes.Equal(certPEM, c.certPEM) && bytes.Equal(keyPEM, c.keyPEM) {
		return false, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("--tls-cert %s and --tls-key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cur.Store(&pair)
	c.certPEM, c.keyPEM = certPEM, keyPEM
	return true, nil
}

// check reloads and logs the outcome.
func (c *certReloader) check() {
	changed, err := c.reload()
	switch {
	case err != nil:
		c.logger.Error("TLS certificate not reloaded; the one in use stays", "err", err)
	case changed:
		c.logger.Info("TLS certificate reloaded", "cert", c.certFile)
	}
}

// watch checks the files on each tick until Close.
func (c *certReloader) watch(ticks <-chan time.Time) {
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.done)
		for {
			select {
			case <-c.stop:
				return
			case <-ticks:
				c.check()
			}
		}
	}()
}

// Close stops watch and waits for it.
func (c *certReloader) Close() error {
	c.stopOnce.Do(func() {
		if c.stop != nil {
			close(c.stop)
			<-c.done
		}
	})
	return nil
}

func readBounded(flagName, path string) ([]byte, error) {
	return parseFile(flagName, path, func(data []byte) ([]byte, error) {
		if len(data) > maxCertFile {
			return nil, fmt.Errorf("larger than %d bytes", maxCertFile)
		}
		return data, nil
	})
}

// listenerTLS settles how the main listener ln serves: with TLS from
// --tls-cert and --tls-key, or plain HTTP, which only a loopback address
// or --insecure-http (a TLS-terminating proxy in front) allows.
func (o *opsFlags) listenerTLS(ln net.Listener, insecureHTTP bool, logger *slog.Logger) (*certReloader, error) {
	switch {
	case o.tlsCert == "" && o.tlsKey == "":
		if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsLoopback() || insecureHTTP {
			return nil, nil
		}
		return nil, fmt.Errorf("--addr %s serves plain HTTP beyond this machine: give --tls-cert and --tls-key, "+
			"or pass --insecure-http when a TLS-terminating proxy fronts it", ln.Addr())
	case o.tlsCert == "" || o.tlsKey == "":
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	return loadCertReloader(o.tlsCert, o.tlsKey, logger)
}
