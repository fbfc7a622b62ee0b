package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAuthserverAccessLog checks that the access log records method, path
// and status (never the query) at level debug, and at a higher level
// passes the response through with nothing logged.
func TestAuthserverAccessLog(t *testing.T) {
	t.Parallel()
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	for _, tc := range []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug, "msg=request method=GET path=/authorize status=418"},
		{slog.LevelWarn, ""},
	} {
		var buf bytes.Buffer
		h := accessLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})), next)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/authorize?code=secret-code", nil))
		if rec.Code != http.StatusTeapot {
			t.Errorf("level %v: status %d", tc.level, rec.Code)
		}
		got := buf.String()
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) || strings.Contains(got, "secret-code") {
			t.Errorf("level %v: logged %q, want %q", tc.level, got, tc.want)
		}
	}
}
