package requeststate_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/requeststate"
)

func TestHandles(t *testing.T) {
	t.Parallel()
	clk := &fixedClock{t: t0}
	h, err := requeststate.NewHandles[string](requeststate.HandlesConfig{TTL: time.Minute, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	alice := requeststate.Owner{Issuer: "https://as.example", Subject: "alice"}
	handle, err := h.Put(alice, "cursor-42")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		owner  requeststate.Owner
		handle string
		ok     bool
	}{
		{"owner", alice, handle, true},
		{"other subject", requeststate.Owner{Issuer: "https://as.example", Subject: "bob"}, handle, false},
		{"other issuer", requeststate.Owner{Issuer: "https://evil.example", Subject: "alice"}, handle, false},
		{"no owner", requeststate.Owner{}, handle, false},
		{"unknown handle", alice, "nope", false},
		{"empty handle", alice, "", false},
		{"oversized handle", alice, strings.Repeat("a", 65), false},
	}
	for _, tc := range cases {
		v, err := h.Get(tc.owner, tc.handle)
		if tc.ok != (err == nil) || (tc.ok && v != "cursor-42") || (!tc.ok && !errors.Is(err, requeststate.ErrUnknownHandle)) {
			t.Errorf("%s: Get = %q, %v", tc.name, v, err)
		}
	}
	h.Delete(requeststate.Owner{Issuer: "https://as.example", Subject: "bob"}, handle)
	if _, err := h.Get(alice, handle); err != nil {
		t.Fatalf("another owner deleted the handle: %v", err)
	}
	clk.t = clk.t.Add(time.Minute + time.Second)
	if _, err := h.Get(alice, handle); !errors.Is(err, requeststate.ErrUnknownHandle) {
		t.Fatalf("expired handle: %v", err)
	}
	if _, err := h.Put(requeststate.Owner{Subject: "x"}, "v"); err == nil {
		t.Fatal("Put without an issuer succeeded")
	}
	if requeststate.HandleKey(alice, "h") == requeststate.HandleKey(requeststate.Owner{Issuer: "https://as.example", Subject: "bob"}, "h") {
		t.Fatal("HandleKey does not depend on the owner")
	}
	if _, err := requeststate.NewHandles[int](requeststate.HandlesConfig{MaxEntries: -1}); err == nil {
		t.Fatal("negative MaxEntries accepted")
	}
}

func TestHandlesBounded(t *testing.T) {
	t.Parallel()
	h, _ := requeststate.NewHandles[int](requeststate.HandlesConfig{MaxEntries: 2})
	o := requeststate.Owner{Issuer: "i", Subject: "s"}
	first, _ := h.Put(o, 1)
	_, _ = h.Put(o, 2)
	_, _ = h.Put(o, 3)
	if _, err := h.Get(o, first); !errors.Is(err, requeststate.ErrUnknownHandle) {
		t.Fatalf("a full store kept its oldest handle: %v", err)
	}
}
