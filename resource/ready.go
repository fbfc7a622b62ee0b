package resource

import (
	"context"
	"errors"
	"fmt"
)

// Ready reports whether the Verifier can verify tokens of every issuer:
// each issuer's key set is fetched if it never was (a later call answers
// from memory, refreshed in the background). An error names the issuer
// whose keys cannot be had; it is for logs, not for callers of a health
// endpoint.
func (v *Verifier) Ready(ctx context.Context) error {
	var errs []error
	for _, name := range v.issuerOrder {
		st := v.issuers[name]
		if st == nil || st.keys == nil {
			continue
		}
		if _, err := st.keys.Keys(ctx, ""); err != nil {
			errs = append(errs, fmt.Errorf("issuer %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
