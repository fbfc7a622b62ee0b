package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// roundCost is what one round of a set-up cost beyond its wall time: the
// processor time of this process (the replicas, their stores and the
// workers), and for a PostgreSQL set-up that of the database server's
// processes and its WAL flushes. A figure that could not be read is
// negative.
type roundCost struct {
	cpu, dbCPU time.Duration
	walSyncs   int64
}

// costMeter reads the counters a roundCost is the difference of.
// db is nil for a set-up without PostgreSQL.
type costMeter struct {
	db *pgx.Conn
}

// costSample is the counters at one instant.
type costSample struct {
	cpu      time.Duration
	dbCPU    map[int]time.Duration // by server process
	walSyncs int64
}

// newCostMeter connects to databaseURL, if not empty, to read the
// server's processes and WAL statistics. The server must run on this
// machine for its processor time to be read (from /proc); otherwise that
// figure is missing.
func newCostMeter(ctx context.Context, databaseURL string) (*costMeter, error) {
	if databaseURL == "" {
		return &costMeter{}, nil
	}
	c, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	return &costMeter{db: c}, nil
}

func (m *costMeter) Close() {
	if m.db != nil {
		_ = m.db.Close(context.Background())
	}
}

// sample reads the counters; one it cannot read is left negative (nil
// for the server's processes).
func (m *costMeter) sample(ctx context.Context) costSample {
	s := costSample{cpu: -1, walSyncs: -1}
	if d, err := loadgen.ProcessCPUTime(os.Getpid()); err == nil {
		s.cpu = d
	}
	if m.db == nil {
		return s
	}
	// With an open_* wal_sync_method every WAL write is synchronous and
	// counts as a write, not a sync.
	if err := m.db.QueryRow(ctx, `SELECT CASE WHEN current_setting('wal_sync_method') LIKE 'open%'
			THEN wal_write ELSE wal_sync END FROM pg_stat_wal`).Scan(&s.walSyncs); err != nil {
		s.walSyncs = -1
	}
	// Every server process but this session's: the backends of the
	// stores' pools, the WAL writer, the checkpointer and the others.
	rows, err := m.db.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()`)
	if err != nil {
		return s
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return s
	}
	s.dbCPU = make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		// A process of this machine's PostgreSQL, not one that happens to
		// have the same number here (a server in a container, say).
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			return costSample{cpu: s.cpu, walSyncs: s.walSyncs}
		}
		d, err := loadgen.ProcessCPUTime(int(pid))
		if err != nil {
			return costSample{cpu: s.cpu, walSyncs: s.walSyncs}
		}
		s.dbCPU[int(pid)] = d
	}
	return s
}

// since returns the cost from s0 to s1. The server's processor time
// counts the processes present at both; a connection opened during the
// round counts from its first sample on.
func (s1 costSample) since(s0 costSample) roundCost {
	c := roundCost{cpu: -1, dbCPU: -1, walSyncs: -1}
	if s0.cpu >= 0 && s1.cpu >= 0 {
		c.cpu = s1.cpu - s0.cpu
	}
	if s0.walSyncs >= 0 && s1.walSyncs >= 0 {
		c.walSyncs = s1.walSyncs - s0.walSyncs
	}
	if s0.dbCPU != nil && s1.dbCPU != nil {
		c.dbCPU = 0
		for pid, d1 := range s1.dbCPU {
			if d0, ok := s0.dbCPU[pid]; ok {
				c.dbCPU += d1 - d0
			} else {
				c.dbCPU += d1
			}
		}
	}
	return c
}

// costLine describes the cost of grants grants over rounds: processor time
// per grant of this process and, with database, of the database server
// and its WAL flushes; a missing figure is "-".
func costLine(grants int64, costs []roundCost, database bool) string {
	if grants <= 0 {
		return "cost: no grants"
	}
	sum := roundCost{}
	for _, c := range costs {
		for _, p := range []struct{ total, v *time.Duration }{{&sum.cpu, &c.cpu}, {&sum.dbCPU, &c.dbCPU}} {
			if *p.v < 0 || *p.total < 0 {
				*p.total = -1
			} else {
				*p.total += *p.v
			}
		}
		if c.walSyncs < 0 || sum.walSyncs < 0 {
			sum.walSyncs = -1
		} else {
			sum.walSyncs += c.walSyncs
		}
	}
	perGrant := func(d time.Duration) string {
		if d < 0 {
			return "-"
		}
		return (d / time.Duration(grants)).Round(time.Microsecond).String()
	}
	line := "cpu per grant: this process " + perGrant(sum.cpu)
	if database {
		line += ", database server " + perGrant(sum.dbCPU)
		if sum.walSyncs > 0 {
			line += fmt.Sprintf("; WAL flushes: %d, %.2f grants per flush", sum.walSyncs, float64(grants)/float64(sum.walSyncs))
		} else {
			line += "; WAL flushes: -"
		}
	}
	return line
}
