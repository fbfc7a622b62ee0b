package dpop_test

import (
	"time"
)

// t0 returns the fixed "now" of the tests (the golden proofs pin it).
// Keys, clocks and hand-built JWS come from internal/oauthtest.
func t0() time.Time { return time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC) }
