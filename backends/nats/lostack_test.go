package nats

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/electorhq/elector/gateway"
)

// TestWriteWhoseAcknowledgementIsLost: a campaign's record is stored but
// its acknowledgement does not come (a timeout after JetStream stored it).
// The write reads the subject's last message, finds its own and answers
// as if the acknowledgement had come: the candidacy is in line, and its
// token works. A record never stored, its publish as unanswered, still
// fails as unavailable, and the candidate campaigns again at once.
func TestWriteWhoseAcknowledgementIsLost(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	tests := []struct {
		name   string
		stored bool
	}{{"Stored", true}, {"NeverSent", false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := open(t, e, freshConfig())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			subject := b.subj.record("lost")
			var lost atomic.Bool
			send := b.request
			b.request = func(m *nats.Msg, timeout time.Duration) (*nats.Msg, error) {
				if m.Subject != subject || !lost.CompareAndSwap(false, true) {
					return send(m, timeout)
				}
				if tt.stored {
					if _, err := send(m, timeout); err != nil {
						return nil, err
					}
				}
				return nil, nats.ErrTimeout
			}
			th := gateway.HashToken(gateway.NewToken())
			campaign := func() (gateway.Status, error) {
				return b.Campaign(ctx, "lost", gateway.Candidacy{ID: "a", TTL: time.Minute, TokenHash: th}, gateway.DefaultSettings())
			}
			st, err := campaign()
			if !lost.Load() {
				t.Fatal("no record's acknowledgement was lost")
			}
			if !tt.stored {
				if !errors.Is(err, gateway.ErrUnavailable) {
					t.Fatalf("campaign: %+v, %v; want ErrUnavailable", st, err)
				}
				th = gateway.HashToken(gateway.NewToken())
				st, err = campaign()
			}
			if err != nil || st.Candidate.State != gateway.StateLeader {
				t.Fatalf("campaign: %+v, %v; want a leading", st, err)
			}
			if _, err := b.Heartbeat(ctx, "lost", "a", th); err != nil {
				t.Fatalf("heartbeat with the campaign's token: %v", err)
			}
		})
	}
}
