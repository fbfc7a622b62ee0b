package authserver

import (
	"context"
	"time"
)

// MaxListedGrants bounds how many grants one [GrantLister] call returns.
const MaxListedGrants = 1000

// GrantLister is implemented by a [GrantStore] that can list a user's
// grants, for the admin API ([Config.Admin]). The memory store, package
// boltstore and package pgstore implement it.
type GrantLister interface {
	// GrantsBySubject returns the grants of subject that have not expired
	// at now, revoked ones included, at most limit of them, newest first.
	GrantsBySubject(ctx context.Context, subject string, now time.Time, limit int) ([]*Grant, error)
}
