package dpop_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

func testNonces(t *testing.T, clk *oauthtest.Clock, key, label string) *dpop.HMACNonces {
	t.Helper()
	n, err := dpop.NewHMACNonces(dpop.HMACNonceConfig{Key: []byte(key), Label: label, Period: time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestHMACNonces(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("s", 32)
	tests := []struct {
		name    string
		advance time.Duration
		checker func(t *testing.T, clk *oauthtest.Clock) *dpop.HMACNonces
		mutate  func(string) string
		wantErr bool
	}{
		{name: "fresh nonce accepted"},
		{name: "accepted in the next period", advance: time.Minute},
		{name: "stale after two periods", advance: 2 * time.Minute, wantErr: true},
		{name: "not accepted before it was minted", advance: -time.Minute, wantErr: true},
		{name: "other key refuses it", checker: func(t *testing.T, clk *oauthtest.Clock) *dpop.HMACNonces {
			return testNonces(t, clk, strings.Repeat("x", 32), "")
		}, wantErr: true},
		{name: "other label refuses it", checker: func(t *testing.T, clk *oauthtest.Clock) *dpop.HMACNonces {
			return testNonces(t, clk, key, "resource-server")
		}, wantErr: true},
		{name: "flipped MAC byte", mutate: func(n string) string { return n[:31] + flip(n[31]) }, wantErr: true},
		{name: "truncated", mutate: func(n string) string { return n[:20] }, wantErr: true},
		{name: "not base64url", mutate: func(n string) string { return strings.Repeat("*", len(n)) }, wantErr: true},
		{name: "empty", mutate: func(string) string { return "" }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := oauthtest.NewClock(t0())
			src := testNonces(t, clk, key, "")
			nonce, err := src.Nonce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(nonce) != 32 {
				t.Fatalf("nonce %q has length %d", nonce, len(nonce))
			}
			check := src
			if tt.checker != nil {
				check = tt.checker(t, clk)
			}
			if tt.mutate != nil {
				nonce = tt.mutate(nonce)
			}
			clk.Advance(tt.advance)
			err = check.CheckNonce(context.Background(), nonce)
			if tt.wantErr != (err != nil) || (err != nil && !errors.Is(err, dpop.ErrNonceInvalid)) {
				t.Fatalf("CheckNonce = %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func TestHMACNoncesRotate(t *testing.T) {
	t.Parallel()
	clk := oauthtest.NewClock(t0())
	n := testNonces(t, clk, strings.Repeat("s", 32), "")
	a, _ := n.Nonce(context.Background())
	clk.Advance(30 * time.Second)
	b, _ := n.Nonce(context.Background())
	clk.Advance(time.Minute)
	c, _ := n.Nonce(context.Background())
	if a != b {
		t.Fatal("nonce changed within a period")
	}
	if a == c {
		t.Fatal("nonce did not rotate")
	}
}

func TestNewHMACNoncesRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  dpop.HMACNonceConfig
	}{
		{"no key", dpop.HMACNonceConfig{}},
		{"short key", dpop.HMACNonceConfig{Key: make([]byte, 31)}},
		{"tiny period", dpop.HMACNonceConfig{Key: make([]byte, 32), Period: time.Millisecond}},
		{"negative period", dpop.HMACNonceConfig{Key: make([]byte, 32), Period: -time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := dpop.NewHMACNonces(tt.cfg); err == nil {
				t.Fatal("NewHMACNonces accepted a bad config")
			}
		})
	}
}
