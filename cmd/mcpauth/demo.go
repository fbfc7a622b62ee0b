package main

import (
	"context"
	"fmt"
	"io"
)

// demoCommand is a placeholder until the end-to-end demo exists.
func demoCommand() command {
	return command{
		name:    "demo",
		summary: "run the whole MCP authorization flow on embedded defaults (not yet implemented)",
		run: func(_ context.Context, _ []string, stdout, _ io.Writer) error {
			fmt.Fprintln(stdout, "mcpauth demo: not yet implemented")
			return nil
		},
	}
}
