//go:build windows

package main

import "io"

// openTerminal returns nil on Windows: the bridge there only prints URL
// elicitations on stderr (a console opened with CONIN$ would compete
// with the host for it).
func openTerminal() io.ReadWriteCloser { return nil }
