package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// serving is a long-running command started in-process by startServing.
type serving struct {
	ready string // the "listening on" line
	base  string // its URL
	admin string // the admin listener's URL, if any
	hup   chan os.Signal
	logs  *syncBuffer
}

// startServing runs serve (serveAuthserver, serveProtect) with args until
// the test ends, with a reload channel the test sends on.
func startServing(t *testing.T, serve func(context.Context, []string, io.Writer, io.Writer, <-chan os.Signal) error, args ...string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{hup: make(chan os.Signal), logs: &syncBuffer{}}
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, args, stdoutW, s.logs, s.hup)
		stdoutW.Close()
	}()
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, stdoutR) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("did not shut down")
		}
	})
	if err != nil || !strings.HasPrefix(line, "listening on ") {
		cancel()
		t.Fatalf("no ready line (%v): %q; error %v; logs %s", err, line, <-done, s.logs.String())
	}
	s.ready = strings.TrimSpace(line)
	s.base = strings.Fields(strings.TrimPrefix(s.ready, "listening on "))[0]
	if i := strings.Index(s.ready, "admin "); i >= 0 {
		s.admin = strings.TrimRight(strings.Fields(s.ready[i+len("admin "):])[0], ",)")
	}
	return s
}

// reload sends SIGHUP and waits for the log line that ends the reload
// with want.
func (s *serving) reload(t *testing.T, want string) {
	t.Helper()
	before := strings.Count(s.logs.String(), want)
	s.hup <- syscall.SIGHUP
	deadline := time.Now().Add(15 * time.Second)
	for strings.Count(s.logs.String(), want) == before {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log after the reload:\n%s", want, s.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func getJSON(t *testing.T, c *http.Client, url string, v any) int {
	t.Helper()
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		t.Fatalf("GET %s: %d: %v", url, resp.StatusCode, err)
	}
	return resp.StatusCode
}

// TestAuthserverReload: SIGHUP applies a valid file's reloadable keys at
// once, keeps the running configuration when the new file is invalid, and
// keeps a restart-only key at its running value, saying so; the state
// (the signing key) outlives each reload.
func TestAuthserverReload(t *testing.T) {
	path := writeConfig(t, "scopes: mcp:a\nsigning-alg: ES256\n")
	s := startServing(t, serveAuthserver, "--addr", "127.0.0.1:0", "--insecure-http", "--config", path)
	metadata := func() (scopes []string, kid string) {
		var m oauthmeta.AuthServerMetadata
		getJSON(t, nil, s.base+"/.well-known/oauth-authorization-server", &m)
		var jwks struct {
			Keys []struct{ Kid, Kty string }
		}
		getJSON(t, nil, s.base+"/jwks.json", &jwks)
		if len(jwks.Keys) != 1 || jwks.Keys[0].Kty != "EC" {
			t.Fatalf("keys %+v", jwks.Keys)
		}
		return m.ScopesSupported, jwks.Keys[0].Kid
	}
	scopes, kid := metadata()
	if !slices.Equal(scopes, []string{"mcp:a"}) {
		t.Fatalf("scopes %q", scopes)
	}
	steps := []struct {
		name, file, log string
		scopes          []string
	}{
		{"good file", "scopes: mcp:a mcp:b\nsigning-alg: ES256\n", "configuration reloaded", []string{"mcp:a", "mcp:b"}},
		{"unknown key", "scopes: mcp:c\nscopse: mcp:d\n", "configuration not reloaded", []string{"mcp:a", "mcp:b"}},
		{"invalid value", "scopes: mcp:c\nconsent: sometimes\n", "configuration not reloaded", []string{"mcp:a", "mcp:b"}},
		{"unparsable file", "scopes: [mcp:c\n", "configuration not reloaded", []string{"mcp:a", "mcp:b"}},
		{"restart-only key", "scopes: mcp:a mcp:e\nsigning-alg: RS256\n", "configuration reloaded", []string{"mcp:a", "mcp:e"}},
	}
	// Requests keep coming during the reloads; each sees one whole
	// configuration.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Get(s.base + "/.well-known/oauth-authorization-server")
				if err != nil {
					t.Error(err)
					return
				}
				var m oauthmeta.AuthServerMetadata
				err = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				if got := strings.Join(m.ScopesSupported, " "); err != nil || got != "mcp:a" && got != "mcp:a mcp:b" && got != "mcp:a mcp:e" {
					t.Errorf("during a reload: scopes %q, %v", got, err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for _, st := range steps {
		if err := os.WriteFile(path, []byte(st.file), 0o600); err != nil {
			t.Fatal(err)
		}
		s.reload(t, st.log)
		got, gotKid := metadata() // checks the key is still the EC one
		if !slices.Equal(got, st.scopes) || gotKid != kid {
			t.Errorf("%s: scopes %q kid %s, want %q %s", st.name, got, gotKid, st.scopes, kid)
		}
	}
	logs := s.logs.String()
	for _, want := range []string{`unknown key \"scopse\"`, "take effect only at a restart", "keys=[signing-alg]", "keys=scopes"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// TestProtectReload: SIGHUP applies protect's reloadable keys and keeps
// its restart-only ones.
func TestProtectReload(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(okUpstream))
	defer up.Close()
	path := writeConfig(t, "scopes: mcp:a\nissuer: [https://as.example]\n")
	s := startServing(t, serveProtect, "--addr", "127.0.0.1:0", "--upstream", up.URL+"/mcp", "--insecure-http", "--config", path)
	scopes := func() []string {
		var md oauthmeta.ProtectedResourceMetadata
		getJSON(t, nil, s.base+"/.well-known/oauth-protected-resource/mcp", &md)
		return md.ScopesSupported
	}
	if got := scopes(); !slices.Equal(got, []string{"mcp:a"}) {
		t.Fatalf("scopes %q", got)
	}
	_ = os.WriteFile(path, []byte("scopes: mcp:a mcp:b\nissuer: [https://as.example]\nresource: https://elsewhere.example/mcp\n"), 0o600)
	s.reload(t, "configuration reloaded")
	if got := scopes(); !slices.Equal(got, []string{"mcp:a", "mcp:b"}) {
		t.Errorf("scopes %q after the reload", got)
	}
	_ = os.WriteFile(path, []byte("scopes: mcp:c\n"), 0o600) // no issuer: invalid
	s.reload(t, "configuration not reloaded")
	if got := scopes(); !slices.Equal(got, []string{"mcp:a", "mcp:b"}) {
		t.Errorf("scopes %q after the invalid file", got)
	}
	if logs := s.logs.String(); !strings.Contains(logs, "keys=[resource]") {
		t.Errorf("the restart-only resource is not logged:\n%s", logs)
	}
}

// TestHealthEndpoints: /healthz and /readyz on the main listener or the
// admin one, answering check names and ok or fail only.
func TestHealthEndpoints(t *testing.T) {
	issuer, _ := startAuthserverIssuer(t, "--insecure-http")
	up := httptest.NewServer(http.HandlerFunc(okUpstream))
	defer up.Close()
	as := startServing(t, serveAuthserver, "--addr", "127.0.0.1:0", "--insecure-http")
	asAdmin := startServing(t, serveAuthserver, "--addr", "127.0.0.1:0", "--insecure-http", "--admin-addr", "127.0.0.1:0")
	good := startServing(t, serveProtect, "--addr", "127.0.0.1:0", "--upstream", up.URL+"/mcp", "--insecure-http", "--issuer", issuer)
	dead := startServing(t, serveProtect, "--addr", "127.0.0.1:0", "--upstream", up.URL+"/mcp", "--insecure-http",
		"--issuer", "http://127.0.0.1:1/nobody", "--admin-addr", "127.0.0.1:0")
	tests := []struct {
		name, url string
		status    int
		want      healthReport
	}{
		{"authserver healthz", as.base + pathHealthz, 200, healthReport{Status: "ok"}},
		{"authserver readyz", as.base + pathReadyz, 200, healthReport{Status: "ok", Checks: map[string]string{"storage": "ok", "signing_keys": "ok"}}},
		{"authserver admin readyz", asAdmin.admin + pathReadyz, 200, healthReport{Status: "ok", Checks: map[string]string{"storage": "ok", "signing_keys": "ok"}}},
		{"authserver admin healthz", asAdmin.admin + pathHealthz, 200, healthReport{Status: "ok"}},
		{"protect readyz", good.base + pathReadyz, 200, healthReport{Status: "ok", Checks: map[string]string{"issuers": "ok"}}},
		{"protect readyz, issuer down", dead.admin + pathReadyz, 503, healthReport{Status: "fail", Checks: map[string]string{"issuers": "fail"}}},
		{"protect healthz, issuer down", dead.admin + pathHealthz, 200, healthReport{Status: "ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var got healthReport
			if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != tc.status || got.Status != tc.want.Status ||
				len(got.Checks) != len(tc.want.Checks) || resp.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("%d %s, want %d %+v", resp.StatusCode, body, tc.status, tc.want)
			}
			for k, v := range tc.want.Checks {
				if got.Checks[k] != v {
					t.Errorf("check %s = %q, want %q", k, got.Checks[k], v)
				}
			}
			if strings.Contains(string(body), "127.0.0.1") || strings.Contains(string(body), "nobody") {
				t.Errorf("the answer leaks configuration: %s", body)
			}
		})
	}
	// With an admin listener, the main one serves no health endpoints.
	if resp, err := http.Get(asAdmin.base + pathReadyz); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("main listener /readyz with --admin-addr: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	if logs := dead.logs.String(); !strings.Contains(logs, "readiness check failed") || !strings.Contains(logs, "check=issuers") {
		t.Errorf("the failed check is not logged:\n%s", logs)
	}
}

// TestReadinessPostgres: /readyz fails when PostgreSQL stops and passes
// again when it is back.
func TestReadinessPostgres(t *testing.T) {
	pg := testdb.StartPostgres(t)
	t.Setenv("MCPAUTH_TEST_DB", pg.NewDatabase(t))
	t.Setenv("MCPAUTH_TEST_KEK", testKEKFlag)
	s := startServing(t, serveAuthserver, "--addr", "127.0.0.1:0", "--insecure-http", "--admin-addr", "127.0.0.1:0",
		"--database-url", "env:MCPAUTH_TEST_DB", "--key-encryption-key", "env:MCPAUTH_TEST_KEK")
	waitReady := func(status int, storage string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var r healthReport
			got := getJSON(t, nil, s.admin+pathReadyz, &r)
			if got == status && r.Checks["storage"] == storage {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("readyz %d %+v, want %d storage %s; logs:\n%s", got, r, status, storage, s.logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitReady(http.StatusOK, "ok")
	pg.Stop()
	waitReady(http.StatusServiceUnavailable, "fail")
	pg.Restart()
	waitReady(http.StatusOK, "ok")
}

// testCert makes a self-signed certificate for 127.0.0.1 named cn, and
// writes it and its key to certFile and keyFile.
func testCert(t *testing.T, cn, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

// servedCert is the name on the certificate addr serves.
func servedCert(t *testing.T, addr string, roots *x509.CertPool) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestTLSCertificateReload: the server serves HTTPS with the pair in the
// files, and a new pair written there after SIGHUP; a broken pair leaves
// the one in use.
func TestTLSCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	roots := x509.NewCertPool()
	roots.AddCert(testCert(t, "first", certFile, keyFile))
	s := startServing(t, serveAuthserver, "--addr", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(s.base, "https://127.0.0.1:") || !strings.Contains(s.ready, "(issuer https://127.0.0.1:") {
		t.Fatalf("ready line %q", s.ready)
	}
	addr := strings.TrimPrefix(s.base, "https://")
	if got := servedCert(t, addr, roots); got != "first" {
		t.Fatalf("serves %q", got)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	var m oauthmeta.AuthServerMetadata
	if getJSON(t, hc, s.base+"/.well-known/oauth-authorization-server", &m); m.Issuer != s.base {
		t.Fatalf("issuer %q", m.Issuer)
	}
	roots.AddCert(testCert(t, "second", certFile, keyFile))
	s.reload(t, "TLS certificate reloaded")
	if got := servedCert(t, addr, roots); got != "second" {
		t.Fatalf("serves %q after the reload", got)
	}
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.reload(t, "TLS certificate not reloaded")
	if got := servedCert(t, addr, roots); got != "second" {
		t.Fatalf("serves %q after a broken pair", got)
	}
}

// TestCertReloaderWatch: the periodic check loads a new pair on a tick
// and stops with Close.
func TestCertReloaderWatch(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	testCert(t, "first", certFile, keyFile)
	logs := &syncBuffer{}
	c, err := loadCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	name := func() string {
		cert, _ := c.getCertificate(nil)
		leaf, _ := x509.ParseCertificate(cert.Certificate[0])
		return leaf.Subject.CommonName
	}
	ticks := make(chan time.Time)
	c.watch(ticks)
	ticks <- time.Now() // nothing changed
	testCert(t, "second", certFile, keyFile)
	ticks <- time.Now()
	ticks <- time.Now() // the second tick returns once the first was handled
	if got := name(); got != "second" {
		t.Fatalf("after a tick: %q", got)
	}
	if n := strings.Count(logs.String(), "TLS certificate reloaded"); n != 1 {
		t.Errorf("%d reloads logged:\n%s", n, logs.String())
	}
	_ = c.Close()
	select {
	case ticks <- time.Now():
		t.Fatal("the watch goes on after Close")
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := loadCertReloader(certFile, filepath.Join(dir, "missing"), slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a missing key loaded")
	}
}

// TestTLSDefaults: TLS 1.3 is negotiated, 1.2 only with strong suites, and
// anything older is refused.
func TestTLSDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	roots := x509.NewCertPool()
	roots.AddCert(testCert(t, "tls", certFile, keyFile))
	c, err := loadCertReloader(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), TLSConfig: serverTLSConfig(c), ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	defer srv.Close()
	addr := ln.Addr().String()
	tests := []struct {
		name    string
		cfg     func() *tls.Config
		version uint16 // 0: refused
	}{
		{"default client", func() *tls.Config { return &tls.Config{} }, tls.VersionTLS13},
		{"TLS 1.2 client", func() *tls.Config { return &tls.Config{MaxVersion: tls.VersionTLS12} }, tls.VersionTLS12},
		{"TLS 1.1 client", func() *tls.Config { return &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11} }, 0},
		{"CBC suite only", func() *tls.Config {
			return &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}
		}, 0},
	}
	for _, tc := range tests {
		cfg := tc.cfg()
		cfg.RootCAs, cfg.ServerName = roots, "127.0.0.1"
		conn, err := tls.Dial("tcp", addr, cfg)
		switch {
		case tc.version == 0 && err == nil:
			conn.Close()
			t.Errorf("%s: handshake succeeded", tc.name)
		case tc.version != 0 && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.version != 0:
			if v := conn.ConnectionState().Version; v != tc.version {
				t.Errorf("%s: version %x", tc.name, v)
			}
			conn.Close()
		}
	}
}

// fakeListener is a listener on addr that accepts nothing.
type fakeListener struct{ addr net.Addr }

func (l fakeListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (l fakeListener) Close() error              { return nil }
func (l fakeListener) Addr() net.Addr            { return l.addr }

// TestPlainHTTPRule: plain HTTP only on a loopback address or with
// --insecure-http; --tls-cert and --tls-key go together.
func TestPlainHTTPRule(t *testing.T) {
	t.Parallel()
	public := fakeListener{&net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 9000}}
	any := fakeListener{&net.TCPAddr{IP: net.IPv6unspecified, Port: 9000}}
	loop := fakeListener{&net.TCPAddr{IP: net.IPv6loopback, Port: 9000}}
	tests := []struct {
		name     string
		ln       net.Listener
		ops      opsFlags
		insecure bool
		want     string
	}{
		{"loopback", loop, opsFlags{}, false, ""},
		{"public address", public, opsFlags{}, false, "serves plain HTTP beyond this machine"},
		{"every address", any, opsFlags{}, false, "serves plain HTTP beyond this machine"},
		{"public address with --insecure-http", public, opsFlags{}, true, ""},
		{"cert without key", public, opsFlags{tlsCert: "x"}, false, "go together"},
		{"key without cert", loop, opsFlags{tlsKey: "x"}, true, "go together"},
		{"missing files", public, opsFlags{tlsCert: "/nonexistent/c", tlsKey: "/nonexistent/k"}, false, "--tls-cert"},
	}
	for _, tc := range tests {
		c, err := tc.ops.listenerTLS(tc.ln, tc.insecure, slog.New(slog.DiscardHandler))
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) || c != nil {
			t.Errorf("%s: %v, %v; want %q", tc.name, c, err, tc.want)
		}
	}
}

// TestLiveHandlerSwap: a request in flight finishes on the generation it
// started on, new requests go to the new one, and the old one is closed
// once, when its last request ends.
func TestLiveHandlerSwap(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{})
	var closedA, closedB sync.WaitGroup
	closedA.Add(1)
	closedB.Add(1)
	a := &generation{handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		_, _ = io.WriteString(w, "a")
	}), close: closedA.Done}
	b := &generation{handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "b") }), close: closedB.Done}
	live := newLiveHandler(a)
	get := func(path string) string {
		rec := httptest.NewRecorder()
		live.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Body.String()
	}
	slow := make(chan string)
	go func() { slow <- get("/slow") }()
	<-started
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = get("/") }()
	}
	live.swap(b)
	wg.Wait()
	if got := get("/"); got != "b" {
		t.Fatalf("after the swap: %q", got)
	}
	if a.retired.Load() && a.refs.Load() == 0 {
		t.Fatal("a is released while its request runs")
	}
	close(release)
	if got := <-slow; got != "a" {
		t.Fatalf("the request in flight got %q", got)
	}
	closedA.Wait() // closed (once: a second Done would panic)
	live.Close()
	closedB.Wait()
}
