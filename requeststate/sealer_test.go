package requeststate_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/replay"
	"github.com/mcpauth/mcpauth/requeststate"
)

var (
	testKey  = bytes.Repeat([]byte{7}, requeststate.KeySize)
	otherKey = bytes.Repeat([]byte{9}, requeststate.KeySize)
	t0       = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
)

type fixedClock struct{ t time.Time }

func (c *fixedClock) now() time.Time { return c.t }

func binding() requeststate.Binding {
	return requeststate.Binding{Issuer: "https://as.example", Subject: "alice", ClientID: "client-1",
		Method: "tools/call", Name: "list_repos", Arguments: []byte(`{"org":"acme","limit":10}`)}
}

func newSealer(t *testing.T, clk *fixedClock, store replay.Store) *requeststate.Sealer {
	t.Helper()
	s, err := requeststate.New(requeststate.Config{Key: testKey, TTL: 10 * time.Minute, Replay: store, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newMemory(t *testing.T, clk *fixedClock) *replay.Memory {
	t.Helper()
	m, err := replay.NewMemory(replay.MemoryConfig{MaxEntries: 100, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOpen(t *testing.T) {
	t.Parallel()
	tamper := func(s string) string {
		raw, _ := base64.RawURLEncoding.DecodeString(s)
		raw[len(raw)-5] ^= 1
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	cases := []struct {
		name   string
		state  func(s string) string
		bind   func(b *requeststate.Binding)
		after  time.Duration
		want   error
		field  string
		data   string
		reopen bool // opened a second time: single use
	}{
		{name: "same request", data: "github"},
		{name: "arguments reordered and spaced", bind: func(b *requeststate.Binding) { b.Arguments = []byte(` { "limit" : 10, "org":"acme" } `) }, data: "github"},
		{name: "expired", after: 10 * time.Minute, want: requeststate.ErrExpired},
		{name: "just before expiry", after: 10*time.Minute - time.Second, data: "github"},
		{name: "tampered", state: tamper, want: requeststate.ErrMalformed},
		{name: "truncated", state: func(s string) string { return s[:len(s)-4] }, want: requeststate.ErrMalformed},
		{name: "not base64", state: func(string) string { return "!!!" }, want: requeststate.ErrMalformed},
		{name: "empty", state: func(string) string { return "" }, want: requeststate.ErrMalformed},
		{name: "oversized", state: func(string) string { return strings.Repeat("A", requeststate.MaxStateLen+1) }, want: requeststate.ErrMalformed},
		{name: "other user", bind: func(b *requeststate.Binding) { b.Subject = "bob" }, want: requeststate.ErrMismatch, field: "subject"},
		{name: "other issuer", bind: func(b *requeststate.Binding) { b.Issuer = "https://evil.example" }, want: requeststate.ErrMismatch, field: "issuer"},
		{name: "other client", bind: func(b *requeststate.Binding) { b.ClientID = "client-2" }, want: requeststate.ErrMismatch, field: "client"},
		{name: "other tool", bind: func(b *requeststate.Binding) { b.Name = "delete_repo" }, want: requeststate.ErrMismatch, field: "name"},
		{name: "other method", bind: func(b *requeststate.Binding) { b.Method = "prompts/get" }, want: requeststate.ErrMismatch, field: "method"},
		{name: "other arguments", bind: func(b *requeststate.Binding) { b.Arguments = []byte(`{"org":"evil","limit":10}`) }, want: requeststate.ErrMismatch, field: "arguments"},
		{name: "number written otherwise", bind: func(b *requeststate.Binding) { b.Arguments = []byte(`{"org":"acme","limit":10.0}`) }, want: requeststate.ErrMismatch, field: "arguments"},
		{name: "empty binding on open", bind: func(b *requeststate.Binding) { b.Subject = "" }, want: requeststate.ErrMismatch, field: "binding"},
		{name: "replayed", reopen: true, want: requeststate.ErrReplayed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := &fixedClock{t: t0}
			s := newSealer(t, clk, newMemory(t, clk))
			state, err := s.Seal(binding(), []byte("github"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.state != nil {
				state = tc.state(state)
			}
			b := binding()
			if tc.bind != nil {
				tc.bind(&b)
			}
			clk.t = clk.t.Add(tc.after)
			data, err := s.Open(context.Background(), state, b)
			if tc.reopen {
				if err != nil {
					t.Fatalf("first open: %v", err)
				}
				data, err = s.Open(context.Background(), state, b)
			}
			if tc.want == nil {
				if err != nil || string(data) != tc.data {
					t.Fatalf("Open = %q, %v; want %q", data, err, tc.data)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, requeststate.ErrRefused) || data != nil {
				t.Fatalf("Open = %q, %v; want %v", data, err, tc.want)
			}
			var me *requeststate.MismatchError
			if tc.field != "" && (!errors.As(err, &me) || me.Field != tc.field) {
				t.Fatalf("Open error %v, want mismatch of %s", err, tc.field)
			}
		})
	}
}

// TestOpenMismatchDoesNotConsume: a state presented by another user is
// refused without being used up, so the owner's retry still succeeds.
func TestOpenMismatchDoesNotConsume(t *testing.T) {
	t.Parallel()
	clk := &fixedClock{t: t0}
	s := newSealer(t, clk, newMemory(t, clk))
	state, _ := s.Seal(binding(), nil)
	other := binding()
	other.Subject = "mallory"
	if _, err := s.Open(context.Background(), state, other); !errors.Is(err, requeststate.ErrMismatch) {
		t.Fatalf("other user: %v", err)
	}
	if _, err := s.Open(context.Background(), state, binding()); err != nil {
		t.Fatalf("owner after the other user: %v", err)
	}
}

type failingStore struct{}

func (failingStore) Use(context.Context, string, time.Time) error { return errors.New("down") }

func TestOpenReplayStoreDownFailsClosed(t *testing.T) {
	t.Parallel()
	clk := &fixedClock{t: t0}
	s := newSealer(t, clk, failingStore{})
	state, _ := s.Seal(binding(), nil)
	if _, err := s.Open(context.Background(), state, binding()); !errors.Is(err, requeststate.ErrUnavailable) {
		t.Fatalf("store down: %v, want ErrUnavailable", err)
	}
}

func TestOpenWithoutReplayStoreReopens(t *testing.T) {
	t.Parallel()
	clk := &fixedClock{t: t0}
	s := newSealer(t, clk, nil)
	state, _ := s.Seal(binding(), nil)
	for i := range 2 {
		if _, err := s.Open(context.Background(), state, binding()); err != nil {
			t.Fatalf("open %d without a replay store: %v", i, err)
		}
	}
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	clk := &fixedClock{t: t0}
	old := newSealer(t, clk, nil)
	state, _ := old.Seal(binding(), []byte("x"))
	rotated, err := requeststate.New(requeststate.Config{Key: otherKey, OldKeys: [][]byte{testKey}, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rotated.Open(context.Background(), state, binding()); err != nil {
		t.Fatalf("state of the old key after rotation: %v", err)
	}
	stranger, _ := requeststate.New(requeststate.Config{Key: otherKey, Now: clk.now})
	if _, err := stranger.Open(context.Background(), state, binding()); !errors.Is(err, requeststate.ErrMalformed) {
		t.Fatalf("state of an unknown key: %v", err)
	}
}

func TestSealRefuses(t *testing.T) {
	t.Parallel()
	s := newSealer(t, &fixedClock{t: t0}, nil)
	cases := []struct {
		name string
		bind func(b *requeststate.Binding)
		data []byte
	}{
		{name: "no issuer", bind: func(b *requeststate.Binding) { b.Issuer = "" }},
		{name: "no subject", bind: func(b *requeststate.Binding) { b.Subject = "" }},
		{name: "no client", bind: func(b *requeststate.Binding) { b.ClientID = "" }},
		{name: "no method", bind: func(b *requeststate.Binding) { b.Method = "" }},
		{name: "arguments not JSON", bind: func(b *requeststate.Binding) { b.Arguments = []byte(`{"a":`) }},
		{name: "trailing arguments", bind: func(b *requeststate.Binding) { b.Arguments = []byte(`{} {}`) }},
		{name: "data too large", data: make([]byte, requeststate.MaxData+1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := binding()
			if tc.bind != nil {
				tc.bind(&b)
			}
			if st, err := s.Seal(b, tc.data); err == nil {
				t.Fatalf("Seal = %q, want an error", st)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]requeststate.Config{
		"no key":       {},
		"short key":    {Key: testKey[:16]},
		"negative TTL": {Key: testKey, TTL: -time.Second},
		"TTL too long": {Key: testKey, TTL: requeststate.MaxTTL + time.Second},
		"bad old key":  {Key: testKey, OldKeys: [][]byte{{1}}},
	} {
		if _, err := requeststate.New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestStateHidesItsContent(t *testing.T) {
	t.Parallel()
	s := newSealer(t, &fixedClock{t: t0}, nil)
	state, _ := s.Seal(binding(), []byte("secret-provider-name"))
	raw, _ := base64.RawURLEncoding.DecodeString(state)
	for _, v := range []string{"alice", "client-1", "list_repos", "secret-provider-name", "acme"} {
		if bytes.Contains(raw, []byte(v)) || strings.Contains(state, v) {
			t.Errorf("the state shows %q", v)
		}
	}
	if len(state) > 400 {
		t.Errorf("state is %d bytes", len(state))
	}
}
