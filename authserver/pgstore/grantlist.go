package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// GrantsBySubject implements [authserver.GrantLister]. The grants table
// has no index on the subject, which lives in the JSON record: the
// listing scans the live grants, which the admin API does rarely.
func (p *Store) GrantsBySubject(ctx context.Context, subject string, now time.Time, limit int) ([]*authserver.Grant, error) {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	rows, err := p.pool.Query(ctx, `SELECT data, revoked FROM grants WHERE data->>'sub' = $1 AND expires_at > $2
		ORDER BY data->>'created_at' DESC LIMIT $3`, subject, now, max(limit, 0))
	if err != nil {
		return nil, pgErr(err)
	}
	defer rows.Close()
	var out []*authserver.Grant
	for rows.Next() {
		var data []byte
		var revoked bool
		if err := rows.Scan(&data, &revoked); err != nil {
			return nil, pgErr(err)
		}
		var g authserver.Grant
		if err := json.Unmarshal(data, &g); err != nil {
			return nil, fmt.Errorf("pgstore: corrupt grant record: %w", err)
		}
		g.Revoked = g.Revoked || revoked
		out = append(out, &g)
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr(err)
	}
	return authserver.SortGrantsNewestFirst(out, limit), nil
}

var _ authserver.GrantLister = (*Store)(nil)
