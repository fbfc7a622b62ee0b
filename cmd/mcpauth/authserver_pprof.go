package main

import "flag"

// registerAuthserverPprof registers authserver's --pprof-addr: the
// net/http/pprof profiles, on a loopback address only, as protect's.
func registerAuthserverPprof(fs *flag.FlagSet, addr *string) {
	fs.StringVar(addr, "pprof-addr", "", "serve net/http/pprof profiles on this loopback address, for profiling (default: off)")
}
