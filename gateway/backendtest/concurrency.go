package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// testConcurrency has many candidates campaign, heartbeat, resign and report
// errors at random, over one backend or two replicas, while observers check
// that no two candidates ever hold one term, that a snapshot never shows two
// leaders, and that the event stream is a valid succession of leaderships.
func testConcurrency(t *testing.T, h Harness, b gateway.Backend) {
	n, dur := h.Candidates, h.Duration
	if n == 0 {
		n = 100
	}
	if dur == 0 {
		dur = 3 * time.Second
	}
	st := newStorm(t, h, b, "storm", gateway.Settings{ErrorCooldown: time.Second})
	replicas, e, ctx := st.replicas, st.election, context.Background()
	answers := st.answers
	fail, claim := answers.fail, answers.claim

	// The storm runs for dur, and on past it (up to ten times as long)
	// until the first replica's stream has shown the five leaderships
	// checked below: a slow backend on a loaded machine must still
	// exercise handovers, and gets the time to.
	begin := time.Now()
	running := func() bool {
		since := time.Since(begin)
		return since < dur || (since < 10*dur && st.recs[0].count(gateway.EventLeaderBegin) < 5)
	}
	var wg sync.WaitGroup
	var answered, contended atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			be := replicas[i%len(replicas)]
			id := fmt.Sprintf("c%03d", i)
			th := ""
			for running() {
				time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
				var (
					st  gateway.Status
					err error
				)
				held := th // the token before this call
				switch p := rand.IntN(100); {
				case th == "":
					th = token()
					st, err = be.Campaign(ctx, e, gateway.Candidacy{ID: id, TTL: 2 * time.Second, TokenHash: th}, defaults)
					held = ""
				case p < 75:
					st, err = be.Heartbeat(ctx, e, id, th)
				case p < 92:
					err = be.Resign(ctx, e, id, th)
					th = ""
				default:
					st, err = be.ReportError(ctx, e, id, th, "storm")
				}
				answered.Add(1)
				switch {
				case errors.Is(err, gateway.ErrCandidateNotFound):
					th = "" // expired meanwhile: campaign again
				case errors.Is(err, gateway.ErrContended):
					// Other writes of the election got there first on
					// every attempt gateway.Conflicts allows: an answer
					// about contention, which a hundred candidates
					// writing one election every 20 ms provoke, not
					// about safety. Its write was not made (a campaign
					// did not join, a resignation did not leave); the
					// candidate goes on as a client does after a 503.
					contended.Add(1)
					th = held
				case err != nil:
					fail("%s: %v", id, err)
					return
				default:
					claim(st)
				}
			}
			if th != "" {
				if err := resignAtLast(be, e, id, th); err != nil {
					fail("final resign %s: %v", id, err)
				}
			}
		}()
	}

	// Observers: snapshots from every replica, all the time.
	obsCtx, obsCancel := context.WithCancel(ctx)
	var obs sync.WaitGroup
	for _, r := range replicas {
		obs.Add(1)
		go func() {
			defer obs.Done()
			var lastTerm uint64
			for obsCtx.Err() == nil {
				s, err := r.Election(obsCtx, e)
				if err != nil {
					if obsCtx.Err() == nil {
						fail("snapshot: %v", err)
					}
					return
				}
				leaders := 0
				for _, c := range s.Candidates {
					if c.State == gateway.StateLeader {
						leaders++
						if s.Leader == nil || s.Leader.ID != c.ID || c.Term != s.Term {
							fail("snapshot leader %+v disagrees with candidate %+v", s.Leader, c)
						}
					}
				}
				if leaders > 1 || (s.Leader != nil && leaders != 1) {
					fail("snapshot with %d leaders: %v", leaders, ids(s.Candidates))
				}
				if s.Term < lastTerm {
					fail("term went back from %d to %d", lastTerm, s.Term)
				}
				lastTerm = s.Term
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	ran := time.Since(begin).Round(time.Millisecond)
	obsCancel()
	obs.Wait()
	streams := st.drain(t)
	begins := 0
	for _, ev := range streams[0] {
		if ev.Type == gateway.EventLeaderBegin {
			begins++
		}
	}
	if begins < 5 {
		t.Errorf("only %d leaderships in %s: the test did not exercise handovers", begins, ran)
	}
	for i := 1; i < len(streams); i++ {
		if len(streams[i]) != len(streams[0]) {
			t.Errorf("replica %d saw %d events, replica 0 saw %d", i, len(streams[i]), len(streams[0]))
			continue
		}
		for j := range streams[0] {
			if streams[i][j].ID != streams[0][j].ID || streams[i][j].Type != streams[0][j].Type {
				t.Errorf("event %d: replica %d has %s %s, replica 0 has %s %s", j, i, streams[i][j].ID, streams[i][j].Type, streams[0][j].ID, streams[0][j].Type)
				break
			}
		}
	}
	if c := contended.Load(); c > answered.Load()/2 {
		t.Errorf("%d of %d answers were election-contended: the storm hardly wrote", c, answered.Load())
	}
	t.Logf("%d candidates over %d replica(s) for %s: %d events, %d leaderships, %d terms claimed in answers, %d of %d answers contended",
		n, len(replicas), ran, len(streams[0]), begins, answers.terms(), contended.Load(), answered.Load())
}

func snapshotEmpty(b gateway.Backend, e string) bool {
	s, err := b.Election(context.Background(), e)
	return err == nil && len(s.Candidates) == 0
}

// storm is what the storms share: the backend and its replica (when the
// harness has one), a fresh election configured with settings, a recorder
// of each replica's event stream from before the first campaign, and the
// claims the candidates were told.
type storm struct {
	b        gateway.Backend
	replicas []gateway.Backend
	election string
	recs     []*recorder
	answers  *claims
}

// newStorm sets up a storm over b in a new election named after prefix.
func newStorm(t *testing.T, h Harness, b gateway.Backend, prefix string, settings gateway.Settings) *storm {
	t.Helper()
	st := &storm{b: b, replicas: []gateway.Backend{b}, election: name(prefix), answers: newClaims()}
	if h.Replica != nil {
		r := h.Replica(t, b)
		start(t, r)
		st.replicas = append(st.replicas, r)
	}
	if _, err := b.Configure(context.Background(), st.election, settings); err != nil {
		t.Fatal(err)
	}
	for _, r := range st.replicas {
		st.recs = append(st.recs, watch(t, r, st.election, snapshot(t, r, st.election).Cursor))
	}
	return st
}

// drain reports what the candidates were told, waits until every replica's
// stream ends with the last candidate gone, checks each stream is a valid
// succession of leaderships, and returns the streams, one per replica.
func (st *storm) drain(t *testing.T) [][]gateway.Event {
	t.Helper()
	st.answers.report(t)
	var streams [][]gateway.Event
	most := 0
	for _, rec := range st.recs {
		ev := rec.wait(t, 30*time.Second, "the stream to catch up", func(ev []gateway.Event) bool {
			return len(ev) > 0 && ev[len(ev)-1].Type == gateway.EventCandidateLeft && snapshotEmpty(st.b, st.election)
		})
		streams = append(streams, ev)
		most = max(most, len(ev))
	}
	// A stream still behind may have ended on an earlier candidate.left
	// when the election emptied; the replicas' streams carry the same
	// events, so each must come to hold as many as the longest.
	for i, rec := range st.recs {
		if len(streams[i]) < most {
			streams[i] = rec.wait(t, 30*time.Second, fmt.Sprintf("replica %d's stream to hold all %d events", i, most), func(ev []gateway.Event) bool {
				return len(ev) >= most
			})
		}
		if err := CheckEvents(streams[i]); err != nil {
			t.Errorf("replica %d stream: %v", i, err)
		}
	}
	return streams
}

// claims collects what the candidates of a storm were told: the one
// candidate told it leads each term (a term told to two is a failure) and
// the first failures seen. Safe for concurrent use.
type claims struct {
	mu     sync.Mutex
	holder map[uint64]string // term → the only candidate ever told it leads that term
	fails  []string
}

func newClaims() *claims { return &claims{holder: map[uint64]string{}} }

// fail records a failure; the first ten are kept.
func (c *claims) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.fails) < 10 {
		c.fails = append(c.fails, fmt.Sprintf(format, args...))
	}
}

// claim records an answer that told a candidate it leads.
func (c *claims) claim(st gateway.Status) {
	if st.Candidate.State != gateway.StateLeader {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.holder[st.Term]; ok && prev != st.Candidate.ID {
		c.fails = append(c.fails, fmt.Sprintf("term %d told to both %s and %s", st.Term, prev, st.Candidate.ID))
	}
	c.holder[st.Term] = st.Candidate.ID
}

// report fails t with every failure recorded.
func (c *claims) report(t *testing.T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.fails {
		t.Error(f)
	}
}

// terms is how many terms were claimed in answers.
func (c *claims) terms() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.holder)
}
