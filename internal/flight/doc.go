// Package flight waits for a call shared among concurrent callers
// (golang.org/x/sync/singleflight) the way every shared fetch and refresh
// in the module does: each caller stops waiting when its own context ends,
// and the call goes on for the others.
//
// It deliberately does not detach or bound the call: the caller's fn runs
// under a context of its own choosing (typically context.WithoutCancel
// plus a timeout), because a call shared by several callers must not end
// when the first of them gives up.
package flight
