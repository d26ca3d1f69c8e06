package soak

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/etcdtest"
)

// The faults of etcd itself, as the soak's table names them.
const (
	faultEtcdLeader   = "SIGSTOP of the etcd leader past the TTL, SIGCONT"
	faultEtcdFollower = "SIGSTOP of an etcd follower, SIGCONT"
	faultEtcdKill     = "kill -9 of an etcd member, restarted"
)

// etcdHeal bounds the wait for the cluster to be healthy again after a
// fault: a resumed or restarted member catches up with the others.
const etcdHeal = time.Minute

// injectEtcdFaults faults the members of c, every three to six seconds
// until ctx ends, in turn: SIGSTOP of the raft leader for two to four
// TTLs (6–12 s), then SIGCONT, when etcd's leader is known to have revoked
// leases early on resuming (the soak's first target); SIGSTOP of a
// follower for the TTL plus one to three seconds, then SIGCONT (what it
// costs the gateways is measured: see LongestAnswer); the leader again;
// kill -9 of a member (each in turn) and its restart one to three seconds
// later. After each it waits until every member answers and all agree on
// a leader, so that two members are never out at once (that would rightly
// stop the cluster), and it starts no fault that could not end before ctx's
// deadline: the run ends with every member up.
func injectEtcdFaults(ctx context.Context, t *testing.T, c *etcdtest.Cluster, h *History) {
	if c == nil {
		return
	}
	deadline, _ := ctx.Deadline()
	kills, followers := 0, 0
	for n := 0; ; n++ {
		wait := time.NewTimer(3*time.Second + rand.N(3*time.Second))
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
		kind, hold := faultEtcdLeader, 2*soakTTL+rand.N(2*soakTTL)
		switch n % 4 {
		case 1:
			kind, hold = faultEtcdFollower, soakTTL+time.Second+rand.N(2*time.Second)
		case 3:
			kind, hold = faultEtcdKill, time.Second+rand.N(2*time.Second)
		}
		if time.Until(deadline) < hold+5*time.Second {
			return
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		leader, err := c.Leader(lctx)
		cancel()
		if err != nil {
			t.Logf("etcd fault skipped: no leader known: %v", err)
			continue
		}
		m := leader
		switch kind {
		case faultEtcdFollower:
			var others []*etcdtest.Member
			for _, o := range c.Members {
				if o != leader {
					others = append(others, o)
				}
			}
			m = others[followers%len(others)]
			followers++
		case faultEtcdKill:
			m = c.Members[kills%len(c.Members)]
			kills++
		}
		f := Fault{Kind: kind, Target: "etcd " + m.Name, Start: time.Now()}
		if kind == faultEtcdKill {
			m.Kill()
		} else {
			m.Pause()
		}
		held := time.NewTimer(hold)
		<-held.C
		if kind == faultEtcdKill {
			if err := m.Start(); err != nil {
				t.Errorf("restarting etcd %s: %v", m.Name, err)
				return
			}
		} else {
			m.Resume()
		}
		f.End = time.Now()
		h.Fault(f)
		hctx, cancel := context.WithTimeout(context.Background(), etcdHeal)
		err = c.WaitHealthy(hctx)
		cancel()
		if err != nil {
			t.Errorf("etcd not healthy %s after %s of %s: %v\n%s", etcdHeal, kind, m.Name, err, lastLines(m.Log(), 20))
			return
		}
	}
}
