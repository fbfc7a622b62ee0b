package clientmeta

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/ascii"
)

// freshness returns how long a fetched document may be reused, following
// the HTTP caching rules that matter here (RFC 9111 §4.2.1, §5.2.2): no-store
// and no-cache mean not at all; max-age wins over Expires; Age is
// subtracted; a response without either gets def. The result is clamped to
// [0, maxTTL] (SEP-991 suggests at most 24 h).
func freshness(h http.Header, now time.Time, def, maxTTL time.Duration) time.Duration {
	ttl, explicit := def, false
	for _, line := range h.Values("Cache-Control") {
		for _, d := range strings.Split(line, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch ascii.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				secs, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(value), `"`), 10, 64)
				if err != nil || secs < 0 {
					return 0
				}
				if !explicit || time.Duration(secs)*time.Second < ttl {
					ttl = clampSeconds(secs)
				}
				explicit = true
			}
		}
	}
	if !explicit {
		if exp := h.Get("Expires"); exp != "" {
			t, err := http.ParseTime(exp)
			if err != nil {
				return 0 // an invalid Expires means already expired (RFC 9111 §5.3)
			}
			base := now
			if d, err := http.ParseTime(h.Get("Date")); err == nil {
				base = d
			}
			ttl = t.Sub(base)
		}
	}
	if age, err := strconv.ParseInt(strings.TrimSpace(h.Get("Age")), 10, 64); err == nil && age > 0 {
		ttl -= clampSeconds(age)
	}
	return min(max(ttl, 0), maxTTL)
}

// clampSeconds converts seconds to a Duration without overflowing.
func clampSeconds(secs int64) time.Duration {
	const limit = int64((1<<63 - 1) / int64(time.Second))
	return time.Duration(min(secs, limit)) * time.Second
}
