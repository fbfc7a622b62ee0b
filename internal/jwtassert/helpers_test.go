package jwtassert_test

import (
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// t0 returns the fixed "now" of the tests (the golden assertions pin it).
// Keys, clocks and hand-built JWS come from internal/oauthtest.
func t0() time.Time { return time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC) }

// signRaw signs the JWT of header h and claims c with key, or with the
// header member "_key" when h has one (nil for an unsigned JWT), which is
// not sent.
func signRaw(t testing.TB, key any, h, c map[string]any) string {
	t.Helper()
	if k, ok := h["_key"]; ok {
		key = k
		delete(h, "_key")
	}
	return oauthtest.SignRaw(t, key, h, c)
}
