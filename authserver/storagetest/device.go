package storagetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// testDeviceCodes checks a [authserver.DeviceCodeStore]: misses, the two
// keys each taken once, updates that apply only when change accepts, one
// winner among concurrent redemptions, copies in and out, and a sweep
// that keeps a code for [authserver.DeviceCodeGrace] after it expired.
func testDeviceCodes(t *testing.T, st authserver.DeviceCodeStore) {
	ctx := context.Background()
	now := storageNow
	if _, err := st.DeviceCode(ctx, "missing"); !errors.Is(err, authserver.ErrNotFound) {
		t.Fatalf("DeviceCode(missing) = %v", err)
	}
	if _, err := st.DeviceCodeByUserCode(ctx, "missing"); !errors.Is(err, authserver.ErrNotFound) {
		t.Fatalf("DeviceCodeByUserCode(missing) = %v", err)
	}
	if _, err := st.UpdateDeviceCode(ctx, "missing", func(*authserver.DeviceCode) error { return nil }); !errors.Is(err, authserver.ErrNotFound) {
		t.Fatalf("UpdateDeviceCode(missing) = %v", err)
	}
	d := &authserver.DeviceCode{Key: "dk1", UserCodeKey: "uk1", ClientID: "tv", Scopes: []string{"a"},
		Resources: []string{"https://r.example"}, Status: authserver.DevicePending, Interval: 5,
		IssuedAt: now, ExpiresAt: now.Add(10 * time.Minute)}
	if err := st.SaveDeviceCode(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Scopes[0] = "changed" // the store holds its own copy
	for _, dup := range []*authserver.DeviceCode{
		{Key: "dk1", UserCodeKey: "uk-other", IssuedAt: now, ExpiresAt: now.Add(time.Minute)},
		{Key: "dk-other", UserCodeKey: "uk1", IssuedAt: now, ExpiresAt: now.Add(time.Minute)},
	} {
		if err := st.SaveDeviceCode(ctx, dup); !errors.Is(err, authserver.ErrAlreadyUsed) {
			t.Fatalf("duplicate %s/%s: %v", dup.Key, dup.UserCodeKey, err)
		}
	}
	got, err := st.DeviceCodeByUserCode(ctx, "uk1")
	if err != nil || got.Key != "dk1" || got.ClientID != "tv" || !slices.Equal(got.Scopes, []string{"a"}) ||
		got.Status != authserver.DevicePending || !got.ExpiresAt.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("DeviceCodeByUserCode = %+v, %v", got, err)
	}
	got.Scopes[0] = "changed"
	if again, _ := st.DeviceCode(ctx, "dk1"); again.Scopes[0] != "a" {
		t.Fatal("a returned record shares memory with the store")
	}

	refusal := errors.New("refused")
	if _, err := st.UpdateDeviceCode(ctx, "dk1", func(d *authserver.DeviceCode) error {
		d.Status = authserver.DeviceDenied
		return refusal
	}); !errors.Is(err, refusal) {
		t.Fatalf("refused update: %v", err)
	}
	if cur, _ := st.DeviceCode(ctx, "dk1"); cur.Status != authserver.DevicePending {
		t.Fatal("a refused update was saved")
	}
	upd, err := st.UpdateDeviceCode(ctx, "dk1", func(d *authserver.DeviceCode) error {
		d.Poll(now)
		d.Status, d.Subject, d.Scopes = authserver.DeviceApproved, "alice", []string{"a", "b"}
		return nil
	})
	if err != nil || upd.Status != authserver.DeviceApproved || upd.Subject != "alice" {
		t.Fatalf("update: %+v %v", upd, err)
	}
	if cur, _ := st.DeviceCode(ctx, "dk1"); !cur.LastPolledAt.Equal(now) || !slices.Equal(cur.Scopes, []string{"a", "b"}) {
		t.Fatalf("update not saved: %+v", cur)
	}

	// Of concurrent redemptions, one wins.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			_, err := st.UpdateDeviceCode(ctx, "dk1", func(d *authserver.DeviceCode) error {
				if d.RedeemedBy != "" {
					return authserver.ErrAlreadyUsed
				}
				d.RedeemedBy = "grant" + string(rune('a'+i))
				return nil
			})
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, authserver.ErrAlreadyUsed) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d concurrent redemptions won", wins.Load())
	}

	if !sweep(t, now.Add(10*time.Minute+authserver.DeviceCodeGrace-time.Second), st) {
		return
	}
	if _, err := st.DeviceCode(ctx, "dk1"); err != nil {
		t.Fatalf("swept within the grace period: %v", err)
	}
	sweep(t, now.Add(10*time.Minute+authserver.DeviceCodeGrace+time.Second), st)
	if _, err := st.DeviceCode(ctx, "dk1"); !errors.Is(err, authserver.ErrNotFound) {
		t.Fatalf("not swept after the grace period: %v", err)
	}
	if _, err := st.DeviceCodeByUserCode(ctx, "uk1"); !errors.Is(err, authserver.ErrNotFound) {
		t.Fatalf("user code not swept: %v", err)
	}
	// The user code is free again.
	if err := st.SaveDeviceCode(ctx, &authserver.DeviceCode{Key: "dk2", UserCodeKey: "uk1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatalf("reusing a swept user code: %v", err)
	}
}
