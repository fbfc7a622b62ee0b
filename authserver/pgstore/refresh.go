package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/mcpauth/mcpauth/authserver"
)

// Bounds of the refresh batches of a [Store]: the rows of one
// statement, and the calls waiting for the next one. A call that finds
// the queue full runs alone.
const (
	refreshBatchMax = 64
	refreshQueueMax = 1024
)

// UseRefreshToken implements [authserver.RefreshTokenUser]. Concurrent calls on
// one store go to the database together, up to 64 in one statement (one round
// trip, one commit): a call that finds no statement in flight sends its own at
// once, with the calls queued meanwhile, and calls that arrive while it runs go
// in the next. Of uses of one token in one batch only the first is sent; the
// others answer ErrNotFound after the batch, so the caller reads the token,
// finds it rotated and treats it as reuse, as it would for two uses on two
// replicas.
func (p *Store) UseRefreshToken(ctx context.Context, u authserver.RefreshUse) (*authserver.Grant, error) {
	g, err := p.refreshes.do(ctx, u)
	if errors.Is(err, errBatchQueueFull) {
		var gs []*authserver.Grant
		if gs, err = p.useRefreshTokens(ctx, []authserver.RefreshUse{u}); err == nil {
			g = gs[0]
		}
	}
	if err != nil {
		return nil, pgErr(err)
	}
	if g == nil {
		return nil, authserver.ErrNotFound
	}
	return g, nil
}

// RefreshBatchSizes returns how many refresh statements this store has
// sent since it opened, by the number of [Store.UseRefreshToken]
// calls each carried: element n counts the statements of n calls, for n
// from 1 to 64 (element 0 is zero). It is for measurements such as
// mcpauth-load's, and safe for concurrent use.
func (p *Store) RefreshBatchSizes() []uint64 { return p.refreshSizes.counts() }

// useRefreshTokens rotates, in one statement and so one transaction
// without BEGIN or COMMIT, every token of uses that
// authserver.RefreshUse.Admits accepts with its grant, and returns
// each one's grant, nil for a use that rotated nothing. The statement's
// UPDATE matches a token and its grant by that check in SQL, over the
// same values: the expiry columns are written with the records' expiries
// (microseconds, rounded the same way on both sides of each comparison),
// and client_id and dpop_jkt are the records' JSON fields; it returns the
// grant, and the INSERT of each successor takes the grant, client and
// expiry from the row it matched. Of concurrent uses of a token on any
// replicas exactly one matches: the others wait for its row lock and then
// find the row rotated. The rows go in the order of their keys, so two
// statements lock common rows in the same order.
//
// The arrays reach unnest through scalar subqueries so that PostgreSQL
// plans the prepared statement once per connection: given the arrays
// themselves, the planner estimates the rows from their lengths, finds
// every custom plan cheaper than a generic one and plans each execution
// again, which cost more than running it.
func (p *Store) useRefreshTokens(ctx context.Context, uses []authserver.RefreshUse) ([]*authserver.Grant, error) {
	p.refreshSizes.add(len(uses))
	// The first use of each key, in key order.
	order := make([]int, 0, len(uses))
	for i, u := range uses {
		if !slices.ContainsFunc(order, func(j int) bool { return uses[j].Key == u.Key }) {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(uses[a].Key, uses[b].Key) })
	var (
		keys, nexts, clients, jkts, iats = make([]string, len(order)), make([]string, len(order)), make([]string, len(order)), make([]string, len(order)), make([]string, len(order))
		nows                             = make([]time.Time, len(order))
	)
	for n, i := range order {
		u := uses[i]
		iat, err := u.Now.MarshalJSON() // as the record's JSON has it
		if err != nil {
			return nil, err
		}
		keys[n], nexts[n], clients[n], jkts[n], nows[n], iats[n] = u.Key, u.NextKey, u.ClientID, u.JKT, u.Now, string(iat)
	}
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	rows, err := p.pool.Query(ctx, `WITH input AS (
			SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::text[]), (SELECT $3::text[]),
					(SELECT $4::text[]), (SELECT $5::timestamptz[]), (SELECT $6::text[]))
				WITH ORDINALITY AS i(key, next_key, client_id, jkt, now, iat, n)
		), old AS (
			UPDATE refresh_tokens r SET rotated = true
			FROM input i, grants g
			WHERE r.key = i.key AND NOT r.rotated AND r.expires_at > i.now AND r.data->>'client_id' = i.client_id
				AND g.id = r.grant_id AND NOT g.revoked AND g.expires_at > i.now
				AND coalesce(g.data->>'dpop_jkt', '') IN ('', i.jkt)
			RETURNING i.n, i.next_key, i.iat, r.grant_id, r.data, r.expires_at, g.data AS grant_data
		), successor AS (
			INSERT INTO refresh_tokens (key, grant_id, data, rotated, expires_at)
			SELECT next_key, grant_id, (data - 'rotated') || jsonb_build_object('key', next_key, 'iat', iat::jsonb), false, expires_at
			FROM old
		)
		SELECT n, grant_data FROM old`,
		keys, nexts, clients, jkts, nows, iats)
	if err != nil {
		return nil, pgErr(err)
	}
	defer rows.Close()
	out := make([]*authserver.Grant, len(uses))
	for rows.Next() {
		// n is the row's position in the arrays, from 1; data is read in
		// place (valid until the next row) and decoded at once.
		var n int64
		var data pgtype.DriverBytes
		if err := rows.Scan(&n, &data); err != nil {
			return nil, pgErr(err)
		}
		if n < 1 || int(n) > len(order) || out[order[n-1]] != nil {
			return nil, errors.New("pgstore: unexpected refresh row")
		}
		var g authserver.Grant
		if err := json.Unmarshal(data, &g); err != nil {
			return nil, fmt.Errorf("pgstore: corrupt grant record: %w", err)
		}
		g.Revoked = false // the statement matched only a grant not revoked
		out[order[n-1]] = &g
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr(err)
	}
	return out, nil
}
