package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpauth/mcpauth/authserver"
)

// GrantsBySubject implements [authserver.GrantLister]. It scans the grants
// bucket: the admin API's listing is rare.
func (b *Store) GrantsBySubject(_ context.Context, subject string, now time.Time, limit int) ([]*authserver.Grant, error) {
	var out []*authserver.Grant
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("grants")).ForEach(func(_, data []byte) error {
			var g authserver.Grant
			if err := json.Unmarshal(data, &g); err != nil {
				return fmt.Errorf("boltstore: corrupt grants record: %w", err)
			}
			if g.Subject == subject && g.ExpiresAt.After(now) {
				out = append(out, &g)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return authserver.SortGrantsNewestFirst(out, limit), nil
}

var _ authserver.GrantLister = (*Store)(nil)
