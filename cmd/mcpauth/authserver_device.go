package main

import (
	"flag"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// deviceFlags turn on the device authorization grant (RFC 8628) of the
// authorization server.
type deviceFlags struct {
	on                 bool
	codeTTL, interval  time.Duration
	failedPerIP, total int
}

func (d *deviceFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&d.on, "device", false, "offer the device authorization grant (RFC 8628) for hosts without a browser: the endpoint, the /device page and the device_code grant (clients need grant=urn:ietf:params:oauth:grant-type:device_code)")
	fs.DurationVar(&d.codeTTL, "device-code-ttl", 0, "lifetime of a device code and its user code, 1m to 30m (default 10m)")
	fs.DurationVar(&d.interval, "device-interval", 0, "minimum polling interval of the device grant, whole seconds (default 5s)")
	fs.IntVar(&d.failedPerIP, "device-failed-lookups-per-ip", 0, "wrong user codes one client address may enter per minute (default 5)")
	fs.IntVar(&d.total, "device-failed-lookups", 0, "wrong user codes all addresses together may enter per minute (default 60)")
}

// config is the server's DeviceConfig; nil without --device.
func (d *deviceFlags) config() *authserver.DeviceConfig {
	if !d.on {
		return nil
	}
	return &authserver.DeviceConfig{CodeTTL: d.codeTTL, Interval: d.interval, FailedLookupsPerIP: d.failedPerIP, FailedLookups: d.total}
}
