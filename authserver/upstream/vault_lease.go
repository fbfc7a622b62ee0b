package upstream

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// The upstream refresh lease. A provider that rotates refresh tokens
// strictly treats a refresh token presented twice as stolen and may
// revoke the user's grant, so of all replicas sharing a store only one
// refreshes a record's tokens at a time: the one that holds its lease.
// The lease is two fields of the record ([authserver.UpstreamTokens.LeaseOwner],
// [authserver.UpstreamTokens.LeaseUntil]) taken with the store's versioned write,
// so of replicas taking it at the same moment exactly one wins. The
// others re-read the record until the holder has stored the new tokens
// or the lease has ended, then try once more, or answer
// temporarily_unavailable.
const (
	// leasePoll is how often a replica waiting for another's refresh
	// reads the record again.
	leasePoll = 25 * time.Millisecond
	// leaseTries bounds how often one refresh tries to take the lease:
	// once, and once more after the lease it waited on ended without new
	// tokens.
	leaseTries = 2
)

// leaseTTL is how long a lease lasts: twice the upstream timeout, which
// bounds the holder's call to the provider (the first half), so the lease
// also covers the store write that follows and some clock skew between
// replicas (the second).
func (v *vault) leaseTTL() time.Duration { return 2 * v.timeout }

// leased reports whether rec's lease is held at now.
func leased(rec *authserver.UpstreamTokens, now time.Time) bool {
	return rec.LeaseOwner != "" && now.Before(rec.LeaseUntil)
}

// refresh renews g's tokens at the provider, holding the record's lease,
// and stores them under the next version; while another refresh holds
// the lease it waits for that one's tokens.
func (v *vault) refresh(ctx context.Context, g *authserver.Grant) (*vaultedToken, error) {
	for range leaseTries {
		rec, t, err := v.load(ctx, g)
		if err != nil {
			return nil, err
		}
		if v.fresh(t) {
			return t, nil
		}
		if !leased(rec, v.now()) {
			held, err := v.takeLease(ctx, rec)
			switch {
			case err == nil:
				return v.refreshHolding(ctx, g, held, t)
			case !errors.Is(err, authserver.ErrAlreadyUsed):
				return nil, err
			}
			// Another write came first: another replica's lease, or
			// its new tokens.
		}
		t, err = v.awaitLease(ctx, g)
		if !errors.Is(err, errLeaseEnded) {
			return t, err
		}
	}
	return nil, errVaultBusy
}

// errLeaseEnded: the lease waited on ended without new tokens (its holder
// gave up, or stopped and the lease expired); the waiter may take it.
var errLeaseEnded = errors.New("upstream: the refresh lease ended without new tokens")

// takeLease writes rec under the next version with a new lease and
// returns it; [authserver.ErrAlreadyUsed] if another write came first.
func (v *vault) takeLease(ctx context.Context, rec *authserver.UpstreamTokens) (*authserver.UpstreamTokens, error) {
	held := cloneTokens(rec)
	held.LeaseOwner, held.LeaseUntil = randomToken(16), v.now().Add(v.leaseTTL())
	held.Version++
	if err := v.store.SaveUpstreamTokens(ctx, held); err != nil {
		return nil, err
	}
	return held, nil
}

// awaitLease re-reads g's record every leasePoll, for about one lease at
// most, until it holds fresh tokens (returned) or no valid lease
// (errLeaseEnded). A lease still held after that is errVaultBusy.
func (v *vault) awaitLease(ctx context.Context, g *authserver.Grant) (*vaultedToken, error) {
	timer := time.NewTimer(leasePoll)
	defer timer.Stop()
	for range int(v.leaseTTL()/leasePoll) + 1 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
		rec, t, err := v.load(ctx, g)
		switch {
		case err != nil:
			return nil, err // errVaultEmpty: the holder's refresh was refused
		case v.fresh(t):
			return t, nil
		case !leased(rec, v.now()):
			return nil, errLeaseEnded
		}
		timer.Reset(leasePoll)
	}
	return nil, errVaultBusy
}

// refreshHolding refreshes at the provider with t's refresh token while
// held's lease is valid, and stores the new tokens in place of held,
// which ends the lease. The call to the provider ends within the upstream
// timeout, so within the lease.
func (v *vault) refreshHolding(ctx context.Context, g *authserver.Grant, held *authserver.UpstreamTokens, t *vaultedToken) (*vaultedToken, error) {
	up := v.ups[t.Issuer] // load checked it
	upCtx, cancel := context.WithTimeout(ctx, up.callTimeout())
	next, err := up.refresh(upCtx, t.RefreshToken)
	cancel()
	if err != nil {
		if re, ok := errors.AsType[*upstreamTokenError](err); ok && re.refused() {
			// Refused though no other refresh ran while the lease held;
			// unless one ran after it ended, the upstream grant is over.
			if _, again, lerr := v.load(ctx, g); lerr == nil && v.fresh(again) {
				return again, nil
			}
			v.log.InfoContext(ctx, "upstream refresh refused; dropping the upstream tokens", "error", truncateLog(re.Code))
			v.Drop(ctx, held.ID)
			return nil, errUpstreamEnded
		}
		v.release(ctx, held)
		return nil, err
	}
	// RFC 6749 §6: without a new refresh token the old one stays valid.
	next.RefreshToken = cmp.Or(next.RefreshToken, t.RefreshToken)
	next.Issuer = t.Issuer
	rec := cloneTokens(held)
	rec.LeaseOwner, rec.LeaseUntil = "", time.Time{}
	rec.Version++
	if err := v.sealInto(rec, next); err != nil {
		v.release(ctx, held)
		return nil, err
	}
	if err := v.store.SaveUpstreamTokens(ctx, rec); errors.Is(err, authserver.ErrAlreadyUsed) {
		// The lease ended before the write (a store slower than the
		// lease's margin) and another write came first: its tokens win.
		v.log.WarnContext(ctx, "upstream tokens changed while this replica held the refresh lease")
		switch _, again, lerr := v.load(ctx, g); {
		case lerr != nil:
			return nil, lerr // errVaultEmpty: the grant was revoked meanwhile
		case v.fresh(again):
			return again, nil
		}
		return nil, errVaultBusy
	} else if err != nil {
		return nil, err
	}
	return next, nil
}

// release ends held's lease without new tokens, so that a waiting
// replica tries at once; if another write came first there is nothing to
// release, and a failed write leaves the lease to expire.
func (v *vault) release(ctx context.Context, held *authserver.UpstreamTokens) {
	rec := cloneTokens(held)
	rec.LeaseOwner, rec.LeaseUntil = "", time.Time{}
	rec.Version++
	if err := v.store.SaveUpstreamTokens(ctx, rec); err != nil && !errors.Is(err, authserver.ErrAlreadyUsed) {
		v.log.WarnContext(ctx, "releasing the upstream refresh lease failed", "err", err)
	}
}

func cloneTokens(t *authserver.UpstreamTokens) *authserver.UpstreamTokens {
	d := *t
	d.Sealed = slices.Clone(t.Sealed)
	return &d
}
