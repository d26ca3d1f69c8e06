package gateway_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// lockedBuffer is a bytes.Buffer safe for a logger and a test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestGatewayLogsEveryChangeOfLeadership: a running Gateway logs at INFO
// each leadership beginning and ending, with how it ended (resigned,
// expired, error, transferred), and transfers asked for and cancelled,
// whichever way they came about; heartbeats log nothing.
func TestGatewayLogsEveryChangeOfLeadership(t *testing.T) {
	logs := &lockedBuffer{}
	b := memory.New()
	gw := gateway.New(b, gateway.Config{
		Logger:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Defaults: &gateway.Settings{ErrorCooldown: time.Hour},
	})
	ctx, cancel := context.WithCancel(context.Background())
	// The log starts where Begin notes the backend's head.
	if _, err := gw.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ta := campaignGW(t, gw, "tl", "a", 10*time.Second)
	tb := campaignGW(t, gw, "tl", "b", time.Hour)
	tc := campaignGW(t, gw, "tl", "c", time.Hour)
	for range 3 {
		if _, err := gw.Heartbeat(ctx, "tl", "b", tb); err != nil {
			t.Fatal(err)
		}
	}
	if err := gw.Resign(ctx, "tl", "a", ta); err != nil { // b leads
		t.Fatal(err)
	}
	if _, err := gw.Transfer(ctx, "tl", "", "c", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.CancelTransfer(ctx, "tl", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Transfer(ctx, "tl", "", "c", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Handover(ctx, "tl", "b", tb); err != nil { // c leads
		t.Fatal(err)
	}
	if _, err := gw.ReportError(ctx, "tl", "c", tc, "begin failed"); err != nil { // b leads again
		t.Fatal(err)
	}
	// In another election, a leader that stops heartbeating expires.
	campaignGW(t, gw, "tl-x", "x", time.Second)
	campaignGW(t, gw, "tl-x", "y", time.Hour)
	want := []string{
		`level=INFO msg="leadership begins" election=tl candidate=a term=1`,
		`level=INFO msg="leadership ends" election=tl candidate=a term=1 reason=resigned`,
		`level=INFO msg="leadership begins" election=tl candidate=b term=2 previous=a previous_term=1 after=resigned`,
		`level=INFO msg="leadership transfer pending" election=tl candidate=c term=2 leader=b reason=transferred`,
		`level=INFO msg="leadership transfer cancelled" election=tl candidate=c term=2 reason=cancelled`,
		`level=INFO msg="leadership ends" election=tl candidate=b term=2 reason=transferred`,
		`level=INFO msg="leadership begins" election=tl candidate=c term=3 previous=b previous_term=2 after=transferred`,
		`level=WARN msg="leader reported an error" election=tl candidate=c term=3 detail="begin failed"`,
		`level=INFO msg="leadership ends" election=tl candidate=c term=3 reason=error`,
		`level=INFO msg="leadership begins" election=tl candidate=b term=4 previous=c previous_term=3 after=error`,
		`level=INFO msg="leadership ends" election=tl-x candidate=x term=1 reason=expired`,
		`level=INFO msg="leadership begins" election=tl-x candidate=y term=2 previous=x previous_term=1 after=expired`,
	}
	eventually.True(t, 10*time.Second, "every transition logged", func() bool {
		l := logs.String()
		for _, w := range want {
			if !strings.Contains(l, w) {
				return false
			}
		}
		return true
	})
	if l := logs.String(); strings.Contains(l, "heartbeat") {
		t.Fatalf("heartbeats were logged:\n%s", l)
	}
}

// TestGatewayFollowsFromBegin: what happens between Begin and Run (a
// server's first requests, served before Run's goroutines start) reaches
// the transition log, the event hub's subscribers and a watch from the
// cursor Begin returned. Without Begin, the log and the hub would start
// from the backend's head as Run found it, after the campaign.
func TestGatewayFollowsFromBegin(t *testing.T) {
	logs := &lockedBuffer{}
	gw := gateway.New(memory.New(), gateway.Config{
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	origin, err := gw.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	campaignGW(t, gw, "first", "a", time.Hour)
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	ch, err := gw.Watch(ctx, "", origin)
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for began := false; !began; {
		select {
		case ev := <-ch:
			if ev.Election != "first" {
				t.Fatalf("event after Begin's cursor: %+v, want only those of the campaign in first", ev)
			}
			began = ev.Type == gateway.EventLeaderBegin && ev.Candidate != nil && ev.Candidate.ID == "a"
		case <-timeout:
			t.Fatal("no leader.begin of a after Begin's cursor within 10s")
		}
	}
	eventually.True(t, 10*time.Second, "the campaign before Run logged", func() bool {
		return strings.Contains(logs.String(), `msg="leadership begins" election=first candidate=a term=1`)
	})
}

// campaignGW campaigns through gw and returns the candidate token.
func campaignGW(t *testing.T, gw *gateway.Gateway, election, id string, ttl time.Duration) string {
	t.Helper()
	_, tok, err := gw.Campaign(context.Background(), election, gateway.CampaignRequest{ID: id, TTL: ttl})
	if err != nil {
		t.Fatalf("campaign %s: %v", id, err)
	}
	return tok
}
