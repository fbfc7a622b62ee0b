package attack

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// logSink is a goroutine-safe buffer behind a debug-level slog.Logger, so a
// test can check what every component logged.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// Logger returns a debug-level logger writing to s.
func (s *logSink) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// secrets collects the credentials a test handled (tokens, codes,
// verifiers, client secrets) and the places they must never show up.
type secrets struct {
	mu     sync.Mutex
	values []string
	texts  []string
	logs   []*logSink
}

// Add records credentials. Values shorter than 8 bytes are ignored: they
// could match by accident and no real credential is that short.
func (s *secrets) Add(v ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range v {
		if len(x) >= 8 {
			s.values = append(s.values, x)
		}
	}
}

// Seen records a text that must hold no credential: an error message, a
// response body, a header value.
func (s *secrets) Seen(text ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.texts = append(s.texts, text...)
}

// SeenErr records err's text.
func (s *secrets) SeenErr(err error) {
	if err != nil {
		s.Seen(err.Error())
	}
}

// Watch adds a log sink to the places checked.
func (s *secrets) Watch(l *logSink) { s.mu.Lock(); s.logs = append(s.logs, l); s.mu.Unlock() }

// Check fails the test if any credential appears in any text or log.
func (s *secrets) Check(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	texts := append([]string(nil), s.texts...)
	for _, l := range s.logs {
		texts = append(texts, l.String())
	}
	for _, v := range s.values {
		for _, text := range texts {
			if strings.Contains(text, v) {
				t.Errorf("a credential (%d bytes, starts %q) leaked into %q", len(v), v[:4], clip(text, 300))
			}
		}
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
