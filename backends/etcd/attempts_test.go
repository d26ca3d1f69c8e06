package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// testMembers returns n members, up in raft term 1, whose clients connect
// nowhere: the attempts of do under test never use them.
func testMembers(n int, timeout time.Duration) *members {
	p := &members{timeout: timeout, log: slog.New(slog.NewTextHandler(io.Discard, nil)), changed: make(chan struct{})}
	for i := range n {
		m := &member{url: fmt.Sprintf("m%d", i), up: true, heard: time.Now(), term: 1}
		m.gone, m.goneFn = context.WithCancel(context.Background())
		m.cli.Store(clientv3.NewCtxClient(context.Background()))
		p.list = append(p.list, m)
	}
	return p
}

// answer is what an attempt of a test request does: wait (until ctx ends
// when forever), then answer applied (or not) or fail with err.
type answer struct {
	wait    time.Duration
	forever bool
	applied bool
	err     error
}

// script runs the attempts of a request in order of their start, the
// i-th doing answers[i] (the last one again past the end), and records
// each attempt's member.
type script struct {
	p       *members
	answers []answer
	mu      sync.Mutex
	members []*member
}

func (s *script) attempt(ctx context.Context, cli *clientv3.Client) (bool, error) {
	s.mu.Lock()
	i := len(s.members)
	for _, m := range s.p.list {
		if m.cli.Load() == cli {
			s.members = append(s.members, m)
		}
	}
	a := s.answers[min(i, len(s.answers)-1)]
	s.mu.Unlock()
	if a.forever {
		<-ctx.Done()
		return false, ctx.Err()
	}
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(a.wait):
	}
	return a.applied, a.err
}

// memberOf returns the member of the i-th attempt, once it has started.
func (s *script) memberOf(i int) *member {
	for {
		s.mu.Lock()
		if len(s.members) > i {
			defer s.mu.Unlock()
			return s.members[i]
		}
		s.mu.Unlock()
		synctest.Wait()
	}
}

func (s *script) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.members)
}

var (
	unavailable = status.Error(codes.Unavailable, "connection refused")
	leaseGoneE  = rpctypes.ErrLeaseNotFound
)

func TestDoMovesOffAMemberThatStopsAnswering(t *testing.T) {
	const timeout = 600 * time.Millisecond
	tests := []struct {
		name    string
		r       repeat
		answers []answer
		// event, when set, happens to the first attempt's member after
		// 100ms: "down" or "term" (a new raft leader).
		event        string
		wantApplied  bool
		wantErr      error // errors.Is; nil for success
		wantAfter    time.Duration
		wantAttempts int
	}{
		{"a read hedged after MemberTimeout", idempotent, []answer{{forever: true}, {wait: 10 * time.Millisecond}}, "", false, nil, timeout + 10*time.Millisecond, 2},
		{"a read moved off a member gone down", idempotent, []answer{{forever: true}, {wait: 10 * time.Millisecond}}, "down", false, nil, 110 * time.Millisecond, 2},
		{"a read tried again after a refused connection", idempotent, []answer{{err: unavailable}, {wait: 10 * time.Millisecond}}, "", false, nil, 10 * time.Millisecond, 2},
		{"etcd's refusal of a read is its answer", idempotent, []answer{{err: rpctypes.ErrCompacted}}, "", false, rpctypes.ErrCompacted, 0, 1},
		{"a slow transaction is not repeated", guarded, []answer{{wait: 2 * timeout, applied: true}}, "", true, nil, 2 * timeout, 1},
		{"a transaction moved off a member gone down applies", guarded, []answer{{forever: true}, {wait: 10 * time.Millisecond, applied: true}}, "down", true, nil, 110 * time.Millisecond, 2},
		{"a transaction moved when its member's leader changed", guarded, []answer{{forever: true}, {wait: 10 * time.Millisecond, applied: true}}, "term", true, nil, 110 * time.Millisecond, 2},
		{"a refusal after an attempt lost is no answer", guarded, []answer{{forever: true}, {wait: 10 * time.Millisecond}}, "down", false, errOutcomeUnknown, 110 * time.Millisecond, 2},
		{"a refusal after a failed attempt is no answer", guarded, []answer{{err: unavailable}, {wait: 10 * time.Millisecond}}, "", false, errOutcomeUnknown, 10 * time.Millisecond, 2},
		{"a refusal is the answer when it is the only one", guarded, []answer{{wait: 10 * time.Millisecond}}, "", false, nil, 10 * time.Millisecond, 1},
		{"etcd's error refusing a transaction is its answer", guarded, []answer{{err: leaseGoneE}}, "", false, leaseGoneE, 0, 1},
		{"etcd's error refusing a transaction after an attempt lost is no answer", guarded, []answer{{forever: true}, {wait: 10 * time.Millisecond, err: leaseGoneE}}, "down", false, errOutcomeUnknown, 110 * time.Millisecond, 2},
		{"etcd's error refusing a transaction after a failed attempt is no answer", guarded, []answer{{err: unavailable}, {wait: 10 * time.Millisecond, err: leaseGoneE}}, "", false, errOutcomeUnknown, 10 * time.Millisecond, 2},
		{"a transaction that never answers is unknown", guarded, []answer{{forever: true}}, "", false, context.DeadlineExceeded, 5 * time.Second, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := testMembers(3, timeout)
				s := &script{p: p, answers: tt.answers}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if tt.event != "" {
					go func() {
						m := s.memberOf(0)
						time.Sleep(100 * time.Millisecond) // the fake clock's: the event's time
						switch tt.event {
						case "down":
							p.down(ctx, m, "test")
						case "term":
							m.heardFrom(&pb.StatusResponse{RaftTerm: 2, Leader: 7}, time.Now())
							p.signal()
						}
					}()
				}
				start := time.Now()
				applied, err := do(ctx, p, tt.r, func(applied bool) bool { return applied }, s.attempt)
				took := time.Since(start)
				if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				if err == nil && applied != tt.wantApplied {
					t.Errorf("applied %v, want %v", applied, tt.wantApplied)
				}
				if took != tt.wantAfter {
					t.Errorf("answered after %s, want %s", took, tt.wantAfter)
				}
				if n := s.attempts(); n != tt.wantAttempts {
					t.Errorf("%d attempts, want %d", n, tt.wantAttempts)
				}
			})
		})
	}
}

func TestRetriableTellsMembersTroubleFromEtcdsAnswer(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{context.Canceled, true},
		{unavailable, true},
		{rpctypes.ErrNoLeader, true},
		{rpctypes.ErrTimeout, true},
		{rpctypes.ErrLeaderChanged, true},
		{rpctypes.ErrTooManyRequests, true},
		{rpctypes.ErrCompacted, false},
		{rpctypes.ErrFutureRev, false},
		{rpctypes.ErrLeaseNotFound, false},
		{rpctypes.ErrPermissionDenied, false},
		{rpctypes.ErrRequestTooLarge, false},
	}
	for _, tt := range tests {
		if got := retriable(tt.err); got != tt.want {
			t.Errorf("retriable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// BenchmarkDoOverhead is what do adds to a request that its first member
// answers at once: the attempt's goroutine, channels and timers.
func BenchmarkDoOverhead(b *testing.B) {
	p := testMembers(3, DefaultMemberTimeout)
	ctx := context.Background()
	f := func(context.Context, *clientv3.Client) (bool, error) { return true, nil }
	for _, r := range []repeat{idempotent, guarded} {
		b.Run(map[repeat]string{idempotent: "idempotent", guarded: "guarded"}[r], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := do(ctx, p, r, func(ok bool) bool { return ok }, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
