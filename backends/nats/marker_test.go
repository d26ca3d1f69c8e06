package nats

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// TestAcknowledgedBeatOutlivesTheMarkerOfTheMessageItReplaced is the
// property every liveness argument of this backend rests on: a beat the
// server acknowledged (conditional on the sequence of the message it
// replaces, as every heartbeat is) keeps its message until that message's
// own TTL, so no marker ends the candidacy sooner.
//
// The server breaks it (see "Known limit: a marker racing a heartbeat" in
// doc.go): it decides under its store's lock that an expired message is
// its subject's last, releases the lock, and only then stores a delete
// marker with Nats-Rollup: sub, which removes every message on the
// subject, including a beat stored in between. The test aims beats at
// that window: on a new stream it gives many subjects a message of one
// second each and, just before the server's expiry pass that finds them
// expired, fires a conditional beat on each in the pass's order (by
// sequence), from several goroutines at once (awaitSecondPass says how
// the pass is timed); then it looks for a beat that was acknowledged and
// whose message is gone, replaced by a marker, long before its TTL. It
// is skipped unless ELECTOR_KNOWN_RACES is set, since it fails while the
// limit stands.
func TestAcknowledgedBeatOutlivesTheMarkerOfTheMessageItReplaced(t *testing.T) {
	skipKnownRace(t)
	e := startServer(t, t.TempDir())
	defer e.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	const (
		subjects = 300
		rounds   = 40
		workers  = 4
		ttl      = time.Second
	)
	for round := range rounds {
		b := open(t, e, freshConfig()) // a new liveness stream, whose expiry passes start with its first message
		subject := func(i int) string { return b.aliveSubject("race", fmt.Sprintf("r%di%d", round, i)) }
		seqs := make([]uint64, subjects)
		for i := range seqs {
			seq, err := b.publishBeat(ctx, subject(i), ttl, nil)
			if err != nil {
				t.Fatal(err)
			}
			seqs[i] = seq
		}
		first, err := b.alive.GetMsg(ctx, seqs[0])
		if err != nil {
			t.Fatal(err)
		}
		// The stream is new, so the server's first expiry pass runs when the
		// first message expires and removes it alone (the others expire
		// later), and the next pass, which finds all the others expired,
		// runs 250 ms after it (the least spacing of the passes). Beats
		// start shortly before that, in the pass's order, and the pass,
		// faster than they are, catches up with them and crosses its
		// window on the way.
		awaitSecondPass(ctx, t, b, subject(0), first.Time.Add(ttl), round)

		next := make(chan int, subjects)
		for i := 1; i < subjects; i++ {
			next <- i
		}
		close(next)
		acked := make([]uint64, subjects)
		beatsStart := time.Now() // no beat below is stored earlier, nor expires sooner than a TTL after it
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := range next {
					seq, err := b.publishBeat(ctx, subject(i), ttl, &seqs[i])
					if err == nil {
						acked[i] = seq
					} else if !isConflict(err) {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()

		// Every marker of the first messages is written by now: the
		// server's expiry pass runs at most 250 ms apart, and every first
		// message expired within the few milliseconds their publishes took.
		last, err := b.alive.GetMsg(ctx, seqs[subjects-1])
		if err == nil {
			time.Sleep(time.Until(last.Time.Add(ttl + 500*time.Millisecond)))
		} else {
			time.Sleep(750 * time.Millisecond)
		}
		checked := time.Now()
		wiped := 0
		for i, seq := range acked {
			if seq == 0 {
				continue
			}
			_, err := b.alive.GetMsg(ctx, seq)
			if err == nil {
				continue
			}
			if !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatal(err)
			}
			m, err := b.alive.GetLastMsgForSubject(ctx, subject(i))
			if err != nil {
				t.Fatal(err)
			}
			if checked.Before(beatsStart.Add(ttl)) && m.Header.Get(jetstream.MarkerReasonHeader) != "" {
				wiped++
				if wiped == 1 {
					t.Errorf("round %d: beat %d on %s was acknowledged (replacing %d), and the marker %d (%s, stored %s) removed it %s before its TTL",
						round, seq, subject(i), seqs[i], m.Sequence, m.Header.Get(jetstream.MarkerReasonHeader), m.Time.Format(time.RFC3339Nano), beatsStart.Add(ttl).Sub(checked))
				}
			}
		}
		if wiped > 0 {
			pattern := make([]byte, subjects)
			for i, seq := range acked {
				pattern[i] = '.'
				if seq != 0 {
					pattern[i] = 'a'
				}
			}
			t.Errorf("round %d: %d acknowledged beats removed by markers before their TTL; beats acknowledged (a) and refused (.) by subject: %s", round, wiped, pattern)
			return
		}
		t.Logf("round %d: no acknowledged beat removed", round)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaderAnsweredByAHeartbeatKeepsItsLeadershipUntilTheAnswersExpiry is
// the same race seen from the API: a leader whose heartbeat was answered
// "leader, expires at X" must still lead at every moment before X, since
// it acts until then. Each round campaigns one candidate (the leader) in
// each of many elections, lets their liveness expire, heartbeats them
// while the server's expiry pass is writing their markers (as above), and
// then finds, before any answer's expiry, every leader so answered still
// leading with its term. A leader expired on the marker that removed its
// acknowledged beat is missing then, and any candidate that campaigned
// would have led. Skipped unless ELECTOR_KNOWN_RACES is set, as above.
func TestLeaderAnsweredByAHeartbeatKeepsItsLeadershipUntilTheAnswersExpiry(t *testing.T) {
	skipKnownRace(t)
	e := startServer(t, t.TempDir())
	defer e.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	const (
		elections = 150
		rounds    = 40
		workers   = 4
		ttl       = time.Second
	)
	for round := range rounds {
		b := open(t, e, freshConfig()) // a new liveness stream, whose expiry passes start with its first message
		stop := runUntil(b)
		election := func(i int) string { return fmt.Sprintf("m%d", i) }
		tokens := make([]string, elections)
		for i := range tokens {
			tokens[i], _ = campaignT(t, b, election(i), "l", ttl)
		}
		first, err := b.alive.GetLastMsgForSubject(ctx, b.aliveSubject(election(0), nonce(tokens[0])))
		if err != nil {
			t.Fatal(err)
		}
		// As above: the first expiry pass takes the first leader's message
		// alone, the next comes 250 ms later; heartbeats start shortly
		// before it, in the order of the leaders' messages.
		pass1 := awaitSecondPass(ctx, t, b, b.aliveSubject(election(0), nonce(tokens[0])), first.Time.Add(ttl), round)

		next := make(chan int, elections)
		for i := 1; i < elections; i++ {
			next <- i
		}
		close(next)
		type answer struct {
			at      time.Time // when the answer came
			term    uint64
			expires time.Time
		}
		answers := make([]answer, elections)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := range next {
					st, err := b.Heartbeat(ctx, election(i), "l", tokens[i])
					if err == nil && st.Position == 0 && st.Leader != nil && st.Leader.ID == "l" {
						answers[i] = answer{time.Now(), st.Term, st.Candidate.ExpiresAt}
					}
				}
			})
		}
		wg.Wait()

		// Every marker of the first messages is written and acted on well
		// before the answers expire (a TTL after the heartbeats began).
		time.Sleep(time.Until(pass1.Add(750 * time.Millisecond)))
		lost, answered := 0, 0
		for i, a := range answers {
			if a.expires.IsZero() {
				continue
			}
			answered++
			el, err := b.Election(ctx, election(i))
			checked := time.Now()
			if err != nil && !errors.Is(err, gateway.ErrElectionNotFound) {
				t.Fatal(err)
			}
			if !checked.Before(a.expires) {
				continue
			}
			if el.Leader == nil || el.Leader.ID != "l" || el.Leader.Term != a.term {
				lost++
				if lost == 1 {
					live := "none"
					if m, err := b.alive.GetLastMsgForSubject(ctx, b.aliveSubject(election(i), nonce(tokens[i]))); err == nil {
						live = fmt.Sprintf("%d (marker %q, stored %s)", m.Sequence, m.Header.Get(jetstream.MarkerReasonHeader), m.Time.Format(time.StampMicro))
					}
					t.Errorf("round %d: %s: heartbeat answered at %s: leader in term %d until %s; at %s the election's leader is %+v, its liveness subject's last message %s",
						round, election(i), a.at.Format(time.StampMicro), a.term, a.expires.Format(time.StampMicro), checked.Format(time.StampMicro), el.Leader, live)
				}
			}
		}
		stop()
		if lost > 0 {
			t.Errorf("round %d: %d of %d leaders answered as leading lost their leadership before the answer's expiry", round, lost, answered)
			return
		}
		t.Logf("round %d: %d heartbeats answered leader, every one still leading", round, answered)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// awaitSecondPass waits until the server's first expiry pass of a new
// liveness stream has written the marker of subject, whose message (the
// stream's first with a TTL) expires at expires, and then until shortly
// before the next pass, 250 ms later: 1 to 4 ms before it, by round. It
// returns when the marker was stored. The server is in this process, so
// its clock is this one.
func awaitSecondPass(ctx context.Context, t *testing.T, b *Backend, subject string, expires time.Time, round int) time.Time {
	t.Helper()
	time.Sleep(time.Until(expires))
	for {
		m, err := b.alive.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Get(jetstream.MarkerReasonHeader) != "" {
			lead := time.Duration(round%4+1) * time.Millisecond
			time.Sleep(time.Until(m.Time.Add(250*time.Millisecond - lead)))
			return m.Time
		}
	}
}

// skipKnownRace skips a reproduction of the open race of a heartbeat with
// the server's expiry marker unless ELECTOR_KNOWN_RACES is set: it fails
// while the limit stands (doc.go, Known limit: a marker racing a
// heartbeat).
func skipKnownRace(t *testing.T) {
	t.Helper()
	if os.Getenv("ELECTOR_KNOWN_RACES") == "" {
		t.Skip("known open race (doc.go, Known limit: a marker racing a heartbeat); set ELECTOR_KNOWN_RACES=1 to run it")
	}
}
