package etcd

import (
	"context"
	"fmt"

	"github.com/electorhq/elector/gateway"
)

// ElectionLeader implements gateway.LeaderReader: Election without the
// candidates. It waits for the same read index as Election, so it is as
// linearizable (and a local read skips it as Election's does), and derives the holders, the transfer and the slots held
// back by the same code (leaderView, leaderSnapshot), so it names the same
// holders with the same terms; it only leaves out the followers and the
// candidates in error, and copies nothing of the election but the
// holders. Errors: gateway.ErrElectionNotFound, gateway.ErrUnavailable.
func (b *Backend) ElectionLeader(ctx context.Context, election string) (gateway.Election, error) {
	if err := b.freshRead(ctx); err != nil {
		return gateway.Election{}, err
	}
	var (
		e      gateway.Election
		exists bool
	)
	now := b.now()
	err := b.readCache(ctx, func(st *state) {
		v := st.leaderView(election) // shares the state's maps: used only here, under the lock
		if exists = v.exists; exists {
			e = b.leaderSnapshot(v, revCursor(st.rev), now)
		}
	})
	if err != nil {
		return gateway.Election{}, err
	}
	if !exists {
		return gateway.Election{}, fmt.Errorf("etcd: %q: %w", election, gateway.ErrElectionNotFound)
	}
	return e, nil
}

// CountCandidates implements gateway.CandidateCounter from the cache as
// it is, without a round trip: the keys of the election's line (native
// ones included) and of its cooldowns, the candidates Election lists. It
// may lag other replicas' writes; the gateway uses it only to let a
// campaign through. Errors: gateway.ErrElectionNotFound,
// gateway.ErrUnavailable.
func (b *Backend) CountCandidates(ctx context.Context, election string) (int, error) {
	n := -1
	err := b.readCache(ctx, func(st *state) {
		if e := st.elections[election]; e != nil && e.exists() {
			n = len(e.line) + len(e.cooling)
		}
	})
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("etcd: %q: %w", election, gateway.ErrElectionNotFound)
	}
	return n, nil
}
