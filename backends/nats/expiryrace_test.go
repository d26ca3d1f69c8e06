package nats

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// TestAcknowledgedBeatOutlivesItsTTL is the property every liveness
// argument of this backend rests on: a beat the server acknowledged
// (conditional on the sequence of the message it replaces, as every
// heartbeat is) keeps its message until its own TTL, whatever the
// server's expiry of the message it replaced does meanwhile.
//
// A liveness stream with delete markers broke it (see "Liveness" in the
// package doc): the server decided under its store's lock that an expired
// message was its subject's last, released the lock, and only then stored
// a marker with Nats-Rollup: sub, which removed a beat stored in between.
// The test aims beats at that window: on a new stream it gives many
// subjects a message of one second each and, just before the server's
// expiry pass that finds them expired, fires a conditional beat on each in
// the pass's order (by sequence), from several goroutines at once
// (awaitSecondPass says how the pass is timed); then it looks for a beat
// that was acknowledged and whose message is gone before its TTL. With
// markers it failed within a few of its rounds.
func TestAcknowledgedBeatOutlivesItsTTL(t *testing.T) {
	e := startServer(t, t.TempDir())
	defer e.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	const (
		subjects = 300
		workers  = 4
		ttl      = time.Second
	)
	for round := range raceRounds(t) {
		b := open(t, e, freshConfig()) // a new liveness stream, whose expiry passes start with its first message
		subject := func(i int) string { return b.subj.alive("race", fmt.Sprintf("r%di%d", round, i)) }
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
		// faster than they are, catches up with them and crosses them on
		// the way.
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

		// Every first message expired within the few milliseconds their
		// publishes took, and the server's expiry passes run at most 250 ms
		// apart: look once they have all run, before the beats' TTL.
		last, err := b.alive.GetMsg(ctx, seqs[subjects-1])
		if err == nil {
			time.Sleep(time.Until(last.Time.Add(ttl + 500*time.Millisecond)))
		} else {
			time.Sleep(750 * time.Millisecond)
		}
		wiped, beats := 0, 0
		pattern := make([]byte, subjects)
		for i, seq := range acked {
			pattern[i] = '.'
			if seq == 0 {
				continue
			}
			beats++
			pattern[i] = 'a'
			_, err := b.alive.GetMsg(ctx, seq)
			checked := time.Now()
			if err == nil || !checked.Before(beatsStart.Add(ttl)) {
				continue
			}
			if !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatal(err)
			}
			wiped++
			pattern[i] = 'X'
			if wiped == 1 {
				last := "nothing"
				if m, err := b.alive.GetLastMsgForSubject(ctx, subject(i)); err == nil {
					last = fmt.Sprintf("%d (marker %q, stored %s)", m.Sequence, m.Header.Get(jetstream.MarkerReasonHeader), m.Time.Format(time.RFC3339Nano))
				}
				t.Errorf("round %d: beat %d on %s was acknowledged (replacing %d) and is gone %s before its TTL; the subject holds %s",
					round, seq, subject(i), seqs[i], beatsStart.Add(ttl).Sub(checked), last)
			}
		}
		if wiped > 0 {
			t.Errorf("round %d: %d acknowledged beats gone before their TTL; acknowledged (a), gone (X) and refused (.) by subject: %s", round, wiped, pattern)
			return
		}
		t.Logf("round %d: %d beats acknowledged, none gone before its TTL", round, beats)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaderAnsweredByAHeartbeatKeepsItsLeadershipUntilTheAnswersExpiry is
// the same property seen from the API: a leader whose heartbeat was
// answered "leader, expires at X" must still lead at every moment before
// X, since it acts until then. Each round campaigns one candidate (the
// leader) in each of many elections, stops heartbeating, then heartbeats
// each leader once more, at one of two kinds of moment:
//   - ServerExpiryPass: shortly before the server's second expiry pass,
//     in the order of the leaders' messages, as in
//     TestAcknowledgedBeatOutlivesItsTTL (this found the delete marker's
//     race, in every run, after 1 to 19 rounds);
//   - Reconciler: each at a moment spread around its own message's expiry:
//     before it, at it, as Run's expiry check asks the server and deletes
//     the message (expiry.go), and after.
//
// Then, before any answer's expiry, it finds every leader so answered
// still leading with its term. A leader expired although a heartbeat was
// acknowledged after the message that expiry judged is missing then; any
// candidate that campaigned would have led.
func TestLeaderAnsweredByAHeartbeatKeepsItsLeadershipUntilTheAnswersExpiry(t *testing.T) {
	// Offsets of Reconciler's heartbeats from the expiry they race: the
	// server's removal runs at it or up to 250 ms later, Run's check at it
	// plus expirySlack and the round trips of its read, clock and delete.
	offsets := []time.Duration{-2 * time.Millisecond, -500 * time.Microsecond, 0, time.Millisecond, 3 * time.Millisecond,
		expirySlack, expirySlack + 500*time.Microsecond, expirySlack + time.Millisecond, expirySlack + 2*time.Millisecond, 10 * time.Millisecond}
	for _, tc := range []struct {
		name string
		// at is when the heartbeat of leader i starts in round, given the
		// expiries of every leader's message; pass, when the server's
		// first expiry pass was seen (ServerExpiryPass).
		at func(i, round int, expiries []time.Time, pass time.Time) time.Time
		// pass says whether to wait for the server's second expiry pass.
		pass bool
	}{
		{"ServerExpiryPass", func(_, _ int, _ []time.Time, pass time.Time) time.Time { return pass }, true},
		{"Reconciler", func(i, round int, expiries []time.Time, _ time.Time) time.Time {
			return expiries[i].Add(offsets[(i+round)%len(offsets)])
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startServer(t, t.TempDir())
			defer e.Shutdown()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			for round := range raceRounds(t) {
				if !heartbeatsAtExpiry(ctx, t, e, round, tc.pass, tc.at) {
					return
				}
			}
		})
	}
}

// heartbeatsAtExpiry runs one round of
// TestLeaderAnsweredByAHeartbeatKeepsItsLeadershipUntilTheAnswersExpiry,
// and reports whether every leader answered as leading still led.
func heartbeatsAtExpiry(ctx context.Context, t *testing.T, e *Embedded, round int, pass bool, at func(i, round int, expiries []time.Time, pass time.Time) time.Time) bool {
	t.Helper()
	const (
		elections = 150
		workers   = 4
		ttl       = time.Second
	)
	b := open(t, e, freshConfig()) // a new liveness stream, whose expiry passes start with its first message
	stop := runUntil(b)
	election := func(i int) string { return fmt.Sprintf("m%d", i) }
	tokens := make([]string, elections)
	for i := range tokens {
		tokens[i], _ = campaignT(t, b, election(i), "l", ttl)
	}
	expiries := make([]time.Time, elections)
	for i := range expiries {
		m, err := b.alive.GetLastMsgForSubject(ctx, b.subj.alive(election(i), nonce(tokens[i])))
		if err != nil {
			t.Fatal(err)
		}
		expiries[i] = m.Time.Add(msgTTL(m.Header.Get(jetstream.MsgTTLHeader)))
	}
	var pass1 time.Time
	first := 0
	if pass {
		// The first expiry pass takes the first leader's message alone, the
		// next comes 250 ms later; heartbeats start shortly before it, in
		// the order of the leaders' messages.
		pass1 = awaitSecondPass(ctx, t, b, b.subj.alive(election(0), nonce(tokens[0])), expiries[0], round)
		first = 1
	}

	next := make(chan int, elections)
	for i := first; i < elections; i++ {
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
				time.Sleep(time.Until(at(i, round, expiries, pass1)))
				st, err := b.Heartbeat(ctx, election(i), "l", tokens[i])
				if err == nil && st.Position == 0 && st.Leader != nil && st.Leader.ID == "l" {
					answers[i] = answer{time.Now(), st.Term, st.Candidate.ExpiresAt}
				}
			}
		})
	}
	wg.Wait()

	// Every expiry of the campaigns' messages is decided and acted on
	// well before the answers expire (a TTL after their heartbeats): the
	// server's passes run at most 250 ms apart.
	time.Sleep(time.Until(maxTime(expiries[elections-1], pass1).Add(300 * time.Millisecond)))
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
				if m, err := b.alive.GetLastMsgForSubject(ctx, b.subj.alive(election(i), nonce(tokens[i]))); err == nil {
					live = fmt.Sprintf("%d (marker %q, stored %s)", m.Sequence, m.Header.Get(jetstream.MarkerReasonHeader), m.Time.Format(time.StampMicro))
				}
				t.Errorf("round %d: %s: heartbeat answered at %s (its message expired at %s): leader in term %d until %s; at %s the election's leader is %+v, its liveness subject's last message %s",
					round, election(i), a.at.Format(time.StampMicro), expiries[i].Format(time.StampMicro), a.term, a.expires.Format(time.StampMicro), checked.Format(time.StampMicro), el.Leader, live)
			}
		}
	}
	stop()
	if lost > 0 {
		t.Errorf("round %d: %d of %d leaders answered as leading lost their leadership before the answer's expiry", round, lost, answered)
		return false
	}
	t.Logf("round %d: %d heartbeats answered leader, every one still leading", round, answered)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// awaitSecondPass waits until the server's first expiry pass of a new
// liveness stream has removed subject's message (the stream's first with
// a TTL, expiring at expires; removed, or replaced by a delete marker on a
// stream that has them), and then until shortly before the next pass, 250
// ms later: 1 to 4 ms before it, by round. It returns when the removal was
// seen. The server is in this process, so its clock is this one.
func awaitSecondPass(ctx context.Context, t *testing.T, b *Backend, subject string, expires time.Time, round int) time.Time {
	t.Helper()
	time.Sleep(time.Until(expires))
	for {
		m, err := b.alive.GetLastMsgForSubject(ctx, subject)
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Fatal(err)
		}
		if err != nil || m.Header.Get(jetstream.MarkerReasonHeader) != "" {
			gone := time.Now()
			lead := time.Duration(round%4+1) * time.Millisecond
			time.Sleep(time.Until(gone.Add(250*time.Millisecond - lead)))
			return gone
		}
	}
}

// raceRounds is how many rounds the expiry races run: 8, or
// ELECTOR_RACE_ROUNDS (each round takes about two seconds).
func raceRounds(t *testing.T) int {
	t.Helper()
	if v := os.Getenv("ELECTOR_RACE_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ELECTOR_RACE_ROUNDS=%q: want a positive number", v)
		}
		return n
	}
	return 8
}
