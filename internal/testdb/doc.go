// Package testdb starts throwaway PostgreSQL and Redis servers for tests:
// each on 127.0.0.1 with a random free port, its files in a temporary
// directory, stopped (and the directory removed) when the test ends.
//
// PostgreSQL refuses to run as root, so when the tests run as root (as CI
// does) the server runs as the "postgres" system user that Debian's
// package creates, in directories owned by that user.
//
// When a server binary is missing, the test is skipped with a message
// naming the Debian package, except under CI (the CI environment variable
// set), where it fails: `make test` installs the packages first, so a
// missing binary there is a broken pipeline, not a reason to skip.
//
// Binaries are looked up in $MCPAUTH_PG_BIN (a directory), then Debian's
// /usr/lib/postgresql/<version>/bin, then $PATH; redis-server in $PATH.
//
// It does not manage replication, TLS or authentication: the servers trust
// every loopback connection.
package testdb
