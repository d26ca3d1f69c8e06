package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// TestPublishSendsAgainWhatWentUnanswered: on a replicated stream, a
// publish whose answer does not come (its leader stepped down as it
// arrived) is sent again. A copy that finds the first stored is refused by
// the expected last sequence, and that refusal is reported as no answer,
// never as a conflict: a record's write then finds its own message
// (landed), a conditional heartbeat fails as unavailable. Without the
// resend the write waited out OpTimeout and failed.
func TestPublishSendsAgainWhatWentUnanswered(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	tests := []struct {
		name   string
		stored bool // the unanswered copy was stored
	}{{"Stored", true}, {"NeverStored", false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := open(t, e, freshConfig())
			b.answerWait = testAnswerWait // as on a replicated stream
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// unanswered loses the answer to the first request on subject.
			unanswered := func(subject string) *atomic.Int32 {
				var sent atomic.Int32
				send := b.request
				b.request = func(m *nats.Msg, timeout time.Duration) (*nats.Msg, error) {
					if m.Subject != subject || sent.Add(1) > 1 {
						return send(m, timeout)
					}
					if tt.stored {
						if _, err := send(m, timeout); err != nil {
							return nil, err
						}
					}
					return nil, nats.ErrTimeout
				}
				return &sent
			}

			sent := unanswered(b.subj.record("resend"))
			th := gateway.HashToken(gateway.NewToken())
			st, err := b.Campaign(ctx, "resend", gateway.Candidacy{ID: "a", TTL: time.Minute, TokenHash: th}, gateway.DefaultSettings())
			if err != nil || st.Candidate.State != gateway.StateLeader {
				t.Fatalf("campaign: %+v, %v; want a leading", st, err)
			}
			if n := sent.Load(); n != 2 {
				t.Errorf("the record was sent %d times, want 2", n)
			}
			if _, err := b.Heartbeat(ctx, "resend", "a", th); err != nil {
				t.Fatalf("heartbeat with the campaign's token: %v", err)
			}

			subject := b.subj.alive("resend-beat", "n1")
			seq, err := b.publishBeat(ctx, subject, time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			sent = unanswered(subject)
			_, err = b.publishBeat(ctx, subject, time.Minute, &seq)
			switch {
			case sent.Load() != 2:
				t.Errorf("the conditional heartbeat was sent %d times, want 2", sent.Load())
			case tt.stored && (err == nil || isConflict(err) || !errors.Is(err, nats.ErrTimeout)):
				t.Errorf("a copy refused after the first was stored: %v; want no answer, not a conflict", err)
			case !tt.stored && err != nil:
				t.Errorf("a copy after one never stored: %v", err)
			}
		})
	}
}

// TestResentSendsAgainUntilAnswered: an idempotent request is sent again
// each time its wait passes without an answer, the wait doubling, within
// OpTimeout; an answer, an error of its own or the caller's end stop it.
func TestResentSendsAgainUntilAnswered(t *testing.T) {
	refused := errors.New("refused")
	noLeader := &jetstream.APIError{Code: 503, ErrorCode: jsClusterNotAvail, Description: "JetStream system temporarily unavailable"}
	tests := []struct {
		name       string
		answerAt   int           // the call that answers (0: none does)
		err        error         // what it answers
		within     time.Duration // the caller's deadline (0: none)
		leaderless int           // the calls before it that found no leader
		noLeader   error         // what those answered (default: JetStream's 10008)
		single     bool          // a stream of one replica: no resends
		wantCalls  int
		wantErr    error
	}{
		// A leader handed over: in place after a pause or two.
		{name: "LeaderMoved", answerAt: 3, leaderless: 2, wantCalls: 3},
		// No leader through all of leaderlessWaits: unavailable.
		{name: "NoLeader", answerAt: 100, leaderless: 99, wantCalls: 1 + len(leaderlessWaits), wantErr: noLeader},
		{name: "NoResponders", answerAt: 2, leaderless: 1, noLeader: nats.ErrNoResponders, wantCalls: 2},
		{name: "AnsweredFirst", answerAt: 1, wantCalls: 1},
		{name: "AnsweredThird", answerAt: 3, wantCalls: 3},
		{name: "RefusedFirst", answerAt: 1, err: refused, wantCalls: 1, wantErr: refused},
		// Waits of 500 ms, 1 s, 2 s, then the rest of OpTimeout (5 s).
		{name: "NeverAnswered", wantCalls: 4, wantErr: context.DeadlineExceeded},
		// 500 ms, 1 s, then the rest of the caller's 2 s.
		{name: "CallerDeadline", within: 2 * time.Second, wantCalls: 3, wantErr: context.DeadlineExceeded},
		{name: "NotReplicated", single: true, wantCalls: 1, wantErr: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &Backend{cfg: Config{OpTimeout: DefaultOpTimeout}, answerWait: answerWait}
				if tt.single {
					b.answerWait = 0 // a stream of one replica
				}
				ctx := context.Background()
				if tt.within > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.within)
					defer cancel()
				}
				calls := 0
				err := b.resent(ctx, func(ctx context.Context) error {
					calls++
					switch {
					case calls <= tt.leaderless && tt.noLeader != nil:
						return tt.noLeader
					case calls <= tt.leaderless:
						return noLeader
					case calls == tt.answerAt:
						return tt.err
					}
					<-ctx.Done()
					return ctx.Err()
				})
				if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Errorf("%d calls, %v; want %d, %v", calls, err, tt.wantCalls, tt.wantErr)
				}
			})
		})
	}
}

// unansweredGets is a stream whose first message get goes unanswered: it
// waits until the caller gives up on it.
type unansweredGets struct {
	jetstream.Stream
	gets atomic.Int32
}

func (s *unansweredGets) GetMsg(ctx context.Context, seq uint64, opts ...jetstream.GetMsgOpt) (*jetstream.RawStreamMsg, error) {
	if s.gets.Add(1) > 1 {
		return s.Stream.GetMsg(ctx, seq, opts...)
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestExpirySendsAgainWhatWentUnanswered: on a replicated stream, the
// requests that expire a candidacy (the server's clock, the deletion of
// its liveness message) are sent again when unanswered, as a leader
// stepping down leaves them, rather than waiting out OpTimeout. A
// deletion whose first copy was applied fails as not found, which the
// expiry reads as a subject to look at again (it finds it empty); one
// whose first copy was lost succeeds.
func TestExpirySendsAgainWhatWentUnanswered(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	for _, tt := range []struct {
		name    string
		applied bool // the unanswered deletion was applied
		wantErr error
	}{{"Applied", true, jetstream.ErrMsgNotFound}, {"Lost", false, nil}} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := freshConfig()
			cfg.OpTimeout = 10 * time.Minute // what a request would wait without the resend
			b := open(t, e, cfg)
			b.answerWait = testAnswerWait // as on a replicated stream
			s := &unansweredGets{Stream: b.alive}
			b.alive = s
			var deletes atomic.Int32
			call := b.call
			b.call = func(ctx context.Context, m *nats.Msg) (*nats.Msg, error) {
				if !strings.Contains(m.Subject, ".MSG.DELETE.") || deletes.Add(1) > 1 {
					return call(ctx, m)
				}
				if tt.applied {
					if _, err := call(ctx, m); err != nil {
						return nil, err
					}
				}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			before := time.Now().Add(-time.Second) // the server's clock may trail this one's a little
			now, err := b.serverNow(ctx)
			if err != nil || now.Before(before) || s.gets.Load() != 2 {
				t.Fatalf("the server's clock: %v, %v after %d gets; want a reading after %v from the second", now, err, s.gets.Load(), before)
			}

			subject := b.subj.alive("resend-expiry", "n1")
			seq, err := b.publishBeat(ctx, subject, time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.deleteBeat(ctx, seq); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) || deletes.Load() != 2 {
				t.Fatalf("delete: %v after %d sends; want %v after 2", err, deletes.Load(), tt.wantErr)
			}
			last, _, alive, err := b.lastBeat(ctx, subject)
			if err != nil || alive || last != 0 {
				t.Fatalf("the subject after the deletion: seq %d, alive %v, %v; want it empty", last, alive, err)
			}
		})
	}
}

// testAnswerWait stands for a replicated stream's answerWait in the tests
// that hold a request's first copy unanswered: half of it, so that the
// copies held until it passes cost little, and long enough that a loaded
// machine answers every real copy within it (each later copy waits twice
// as long), which the tests count.
const testAnswerWait = answerWait / 2

// unansweredKVGets is a KV bucket whose first get goes unanswered.
type unansweredKVGets struct {
	jetstream.KeyValue
	gets atomic.Int32
}

func (kv *unansweredKVGets) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if kv.gets.Add(1) > 1 {
		return kv.KeyValue.Get(ctx, key)
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestKVSendsAgainWhatWentUnanswered: on a replicated stream, the KV's
// requests are sent again when unanswered. A write whose first copy was
// stored finds it (the expected revision refuses the second) and reports
// the outcome unknown, unavailable, never a revision mismatch, which
// would tell its caller that someone else wrote the key; but a deletion
// of whatever revision, which finds the key gone, succeeds. A write whose
// first copy was lost is stored by the second.
func TestKVSendsAgainWhatWentUnanswered(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	ops := []struct {
		name      string
		write     func(ctx context.Context, b *Backend, rev uint64) error
		key, want string // the key written, and its value once written ("": deleted)
		known     bool   // the outcome is known though the first answer was lost
	}{
		{"Update", func(ctx context.Context, b *Backend, rev uint64) error {
			_, err := b.Update(ctx, "resend/k", []byte("2"), rev)
			return err
		}, "resend/k", "2", false},
		{"Create", func(ctx context.Context, b *Backend, _ uint64) error {
			_, err := b.Create(ctx, "resend/new", []byte("3"))
			return err
		}, "resend/new", "3", false},
		{"Delete", func(ctx context.Context, b *Backend, rev uint64) error { return b.Delete(ctx, "resend/k", rev) }, "resend/k", "", false},
		{"DeleteAny", func(ctx context.Context, b *Backend, _ uint64) error { return b.Delete(ctx, "resend/k", 0) }, "resend/k", "", true},
	}
	for _, op := range ops {
		for _, stored := range []bool{true, false} { // the unanswered copy was stored
			t.Run(fmt.Sprintf("%s/stored=%v", op.name, stored), func(t *testing.T) {
				cfg := freshConfig()
				cfg.OpTimeout = 10 * time.Minute // what a request would wait without the resend
				b := open(t, e, cfg)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				rev, err := b.Create(ctx, "resend/k", []byte("1"))
				if err != nil {
					t.Fatal(err)
				}

				b.answerWait = testAnswerWait // as on a replicated stream, from here on
				kv := &unansweredKVGets{KeyValue: b.kv}
				b.kv = kv
				if it, err := b.Get(ctx, "resend/k"); err != nil || string(it.Value) != "1" || kv.gets.Load() != 2 {
					t.Fatalf("get: %+v, %v after %d gets; want 1 from the second", it, err, kv.gets.Load())
				}

				var sent atomic.Int32
				send := b.request
				b.request = func(m *nats.Msg, timeout time.Duration) (*nats.Msg, error) {
					if !strings.HasPrefix(m.Subject, b.kvSubject("resend.")) || sent.Add(1) > 1 {
						return send(m, timeout)
					}
					if stored {
						if _, err := send(m, timeout); err != nil {
							return nil, err
						}
					}
					return nil, nats.ErrTimeout
				}
				err = op.write(ctx, b, rev)
				switch {
				case sent.Load() != 2:
					t.Errorf("the write was sent %d times, want 2", sent.Load())
				case stored && !op.known && (!errors.Is(err, gateway.ErrUnavailable) || errors.Is(err, gateway.ErrRevisionMismatch)):
					t.Errorf("a write whose first copy was stored: %v; want unavailable, not a mismatch", err)
				case (!stored || op.known) && err != nil:
					t.Errorf("a write whose first copy was stored=%v: %v; want it done", stored, err)
				}
				it, err := b.Get(ctx, op.key)
				switch {
				case op.want == "" && !errors.Is(err, gateway.ErrKeyNotFound):
					t.Errorf("%s after its deletion: %+v, %v; want it gone", op.key, it, err)
				case op.want != "" && (err != nil || string(it.Value) != op.want || it.Revision != rev+1):
					t.Errorf("%s after the write: %+v, %v; want %s at revision %d, stored once", op.key, it, err, op.want, rev+1)
				}
			})
		}
	}
}
