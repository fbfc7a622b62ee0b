// Command mcpauth is the command-line face of mcpauth: a narrated demo of
// the whole MCP authorization flow (`mcpauth demo`), the demo authorization
// server (`mcpauth authserver`), a reverse proxy that puts OAuth in front of
// any Streamable HTTP MCP server (`mcpauth protect`), the client library as
// a CLI (`mcpauth login|token|call|logout`), a self-test of any MCP
// server's authorization (`mcpauth check`) and a stdio bridge for MCP hosts
// that start servers only as local commands (`mcpauth bridge`). Each
// subcommand lives in its own file and is listed in [commands].
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand. run returns a flag.ErrHelp-wrapping error for
// usage mistakes (exit status 2) and any other error for failures (1).
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands; a new one is a new file plus one line
// here.
func commands() []command {
	return []command{
		demoCommand(),
		authserverCommand(),
		protectCommand(),
		loginCommand(),
		tokenCommand(),
		callCommand(),
		logoutCommand(),
		checkCommand(),
		bridgeCommand(),
		versionCommand(),
		delegateCommand(),
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp) && helpRequested(args[1:]):
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 2
		default:
			fmt.Fprintf(stderr, "mcpauth %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "mcpauth: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mcpauth <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'mcpauth <command> -h' for the flags of a command.")
}
