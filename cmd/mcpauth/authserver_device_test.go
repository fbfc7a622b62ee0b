package main

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestAuthserverDeviceFlags: --device turns the device grant on with the
// given settings; without it the configuration has none.
func TestAuthserverDeviceFlags(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}
	f, err := parseAuthserverFlags([]string{"--insecure-http", "--device", "--device-code-ttl", "15m", "--device-interval", "7s",
		"--device-failed-lookups-per-ip", "3", "--device-failed-lookups", "30"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Device
	if d == nil || d.CodeTTL != 15*time.Minute || d.Interval != 7*time.Second || d.FailedLookupsPerIP != 3 || d.FailedLookups != 30 {
		t.Fatalf("Device = %+v", d)
	}
	f, _ = parseAuthserverFlags([]string{"--insecure-http"}, io.Discard)
	if cfg, _ := f.config(addr, nil); cfg.Device != nil {
		t.Fatal("device grant on without --device")
	}
}
