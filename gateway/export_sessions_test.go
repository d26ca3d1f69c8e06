package gateway

import (
	"context"
	"time"
)

// SessionClock sets the clock of g's sessions over the KV (none when the
// backend keeps sessions itself).
func SessionClock(g *Gateway, now func() time.Time) { g.kvSessions.now = now }

// SweepSessions sweeps g's expired sessions over the KV now.
func SweepSessions(ctx context.Context, g *Gateway) { g.kvSessions.sweep(ctx) }

// SessionMemberKey is the KV key naming a session's candidacy in election.
func SessionMemberKey(id, election string) string { return memberKey(id, election) }
