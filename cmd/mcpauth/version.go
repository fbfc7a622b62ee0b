package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func versionCommand() command {
	return command{
		name:    "version",
		summary: "print the version of mcpauth and of the Go toolchain that built it",
		run:     runVersion,
	}
}

// runVersion prints "mcpauth VERSION (go1.x, os/arch)": the module version
// when installed with go install, the revision when built from a git
// checkout, else (devel).
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "", "Prints the version of mcpauth and of the Go toolchain that built it.", stderr)
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "mcpauth %s (%s, %s/%s)\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}

// buildVersion is the version the build information names.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "(devel)"
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
	}
	return v
}
