package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/bridge"
)

// registerDevice registers --device on the client commands.
func registerDevice(fs *flag.FlagSet, on *bool) {
	fs.BoolVar(on, "device", false, "log in with the device flow (RFC 8628) instead of a browser on this machine: "+
		"the code and the URL to open on any other device are printed to stderr; the authorization server must offer it")
}

// deviceFlow is the client's device flow for --device: the prompt goes
// to stderr, never to stdout, which carries results (and in the bridge
// nothing but JSON-RPC). No device login starts while the bridge exits.
func deviceFlow(stderr io.Writer) *client.DeviceFlow {
	show := client.PrintDeviceCode(stderr)
	return &client.DeviceFlow{Show: func(ctx context.Context, p *client.DevicePrompt) error {
		if bridge.Unattended(ctx) {
			return errors.New("no login while exiting")
		}
		return show(ctx, p)
	}}
}
