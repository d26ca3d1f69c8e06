package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// receiver is a webhook endpoint that keeps every request it gets and
// answers 204.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []*http.Request // with their bodies read into memory
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		kept := r.Clone(context.Background())
		kept.Body = io.NopCloser(strings.NewReader(string(body)))
		rc.mu.Lock()
		rc.got = append(rc.got, kept)
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// at returns the requests to path so far.
func (rc *receiver) at(path string) []*http.Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*http.Request
	for _, r := range rc.got {
		if r.URL.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// readAt verifies and reads request i to path, once it has come.
func (rc *receiver) readAt(t *testing.T, path string, i int, secrets ...string) (client.Event, *http.Request) {
	t.Helper()
	waitUntil(t, 20*time.Second, "delivery "+path, func() bool { return len(rc.at(path)) > i })
	r := rc.at(path)[i]
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	ev, err := client.ReadWebhook(r, secrets...)
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("delivery %d to %s: %v", i, path, err)
	}
	return ev, r
}

// settled waits until the newest delivery of a log has succeeded and
// returns the log.
func settled(t *testing.T, what string, log func() ([]client.Delivery, error)) []client.Delivery {
	t.Helper()
	var ds []client.Delivery
	var err error
	waitUntil(t, 20*time.Second, what+" to succeed", func() bool {
		ds, err = log()
		return err != nil || (len(ds) > 0 && ds[0].Status == client.DeliverySucceeded)
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return ds
}

// manual says whether one of d's attempts was asked for through the API.
func manual(d client.Delivery) bool {
	for _, a := range d.Attempts {
		if a.Manual {
			return true
		}
	}
	return false
}

func TestSubscriptionDeliversListsRedeliversAndRotates(t *testing.T) {
	gw := newGateway(t, "--webhooks-allow-private-networks")
	rc := newReceiver(t)
	ctx := context.Background()
	c := client.New(gw.URL)

	sub, err := c.Subscribe(ctx, "hooks", client.SubscriptionRequest{URL: rc.URL + "/sub", Types: []string{client.EventLeaderBegin, client.EventLeaderEnd}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sub.Secret, "whsec_") || sub.ID == "" || sub.Election != "hooks" || len(sub.Types) != 2 || len(sub.Secrets) != 1 || sub.CreatedAt.IsZero() {
		t.Fatalf("subscribe: %+v", sub)
	}
	if subs, err := c.Subscriptions(ctx, "hooks"); err != nil || len(subs) != 1 || subs[0].ID != sub.ID || subs[0].Secret != "" {
		t.Fatalf("subscriptions: %+v, %v", subs, err)
	}
	if got, err := c.Subscription(ctx, "hooks", sub.ID); err != nil || got.ID != sub.ID || got.URL != rc.URL+"/sub" || got.Secret != "" || got.Disabled {
		t.Fatalf("subscription: %+v, %v", got, err)
	}

	st, tok, err := c.Campaign(ctx, "hooks", client.CampaignRequest{ID: "a", TTL: time.Minute, Webhook: &client.CandidateWebhook{URL: rc.URL + "/own", BeginTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(st.WebhookSecret, "whsec_") {
		t.Fatalf("campaign with a webhook: no webhook secret in %+v", st)
	}
	ev, first := rc.readAt(t, "/sub", 0, sub.Secret)
	if ev.Type != client.EventLeaderBegin || ev.Data.Candidate == nil || ev.Data.Candidate.ID != "a" || ev.Data.Term != st.Term {
		t.Fatalf("the subscription's delivery: %+v", ev)
	}
	if ev, _ := rc.readAt(t, "/own", 0, st.WebhookSecret); ev.Type != client.EventLeaderBegin || ev.Data.Term != st.Term {
		t.Fatalf("the candidate's own delivery: %+v", ev)
	}

	ds := settled(t, "the subscription's delivery", func() ([]client.Delivery, error) { return c.Deliveries(ctx, "hooks", sub.ID, 0) })
	d := ds[0]
	if d.EventID != first.Header.Get(client.WebhookIDHeader) || d.EventType != client.EventLeaderBegin || d.Term != st.Term ||
		len(d.Attempts) != 1 || d.Attempts[0].StatusCode != http.StatusNoContent || d.Attempts[0].At.IsZero() || d.Attempts[0].Manual ||
		d.Payload == nil || d.Payload.Type != client.EventLeaderBegin || d.Payload.Data.Candidate == nil || d.Payload.Data.Candidate.ID != "a" {
		t.Fatalf("delivery log: %+v (payload %+v)", d, d.Payload)
	}
	if one, err := c.Deliveries(ctx, "hooks", sub.ID, 1); err != nil || len(one) != 1 || one[0].ID != d.ID {
		t.Fatalf("delivery log of one: %+v, %v", one, err)
	}
	if got, err := c.Delivery(ctx, "hooks", sub.ID, d.ID); err != nil || got.ID != d.ID || got.EventID != d.EventID {
		t.Fatalf("delivery: %+v, %v", got, err)
	}
	again, err := c.Redeliver(ctx, "hooks", sub.ID, d.ID)
	if err != nil || len(again.Attempts) != 2 || !manual(again) {
		t.Fatalf("redeliver: %+v, %v", again, err)
	}
	// The redelivery carries the same webhook-id: a receiver drops it.
	if _, r := rc.readAt(t, "/sub", 1, sub.Secret); r.Header.Get(client.WebhookIDHeader) != d.EventID {
		t.Fatalf("redelivery has webhook-id %q, want %q", r.Header.Get(client.WebhookIDHeader), d.EventID)
	}

	own := settled(t, "the candidate's delivery", func() ([]client.Delivery, error) { return c.CandidateDeliveries(ctx, "hooks", "a", tok, 0) })
	if own[0].EventType != client.EventLeaderBegin || own[0].Term != st.Term {
		t.Fatalf("candidate's delivery log: %+v", own)
	}
	if again, err := c.RedeliverCandidate(ctx, "hooks", "a", tok, own[0].ID); err != nil || len(again.Attempts) != 2 || !manual(again) {
		t.Fatalf("redeliver the candidate's: %+v, %v", again, err)
	}
	rc.readAt(t, "/own", 1, st.WebhookSecret)

	rotated, err := c.RotateSecret(ctx, "hooks", sub.ID)
	if err != nil || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == sub.Secret || len(rotated.Secrets) != 2 {
		t.Fatalf("rotate: %+v, %v", rotated, err)
	}
	if !rotated.Secrets[0].ExpiresAt.IsZero() || rotated.Secrets[1].ExpiresAt.IsZero() {
		t.Fatalf("rotate: the old secret should expire and the new one not: %+v", rotated.Secrets)
	}
	if err := c.Resign(ctx, "hooks", "a", tok); err != nil {
		t.Fatal(err)
	}
	// During the overlap both secrets sign; the new one alone verifies.
	if ev, r := rc.readAt(t, "/sub", 2, rotated.Secret); ev.Type != client.EventLeaderEnd || len(strings.Fields(r.Header.Get(client.WebhookSignatureHeader))) != 2 {
		t.Fatalf("after the rotation: %+v, signatures %q", ev, r.Header.Get(client.WebhookSignatureHeader))
	}

	if err := c.Unsubscribe(ctx, "hooks", sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscription(ctx, "hooks", sub.ID); !errors.Is(err, client.ErrWebhookNotFound) {
		t.Fatalf("subscription after unsubscribe: %v, want ErrWebhookNotFound", err)
	}
}

func TestSubscriptionCallsAnswerTheirSentinels(t *testing.T) {
	gw := newGateway(t, "--webhooks-allow-private-networks")
	ctx := context.Background()
	c := client.New(gw.URL)
	sub, err := c.Subscribe(ctx, "typed", client.SubscriptionRequest{URL: "http://127.0.0.1:9/hook"})
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := c.Campaign(ctx, "typed", client.CampaignRequest{ID: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"no such subscription", func() error { _, err := c.Subscription(ctx, "typed", "sub_nope"); return err }, client.ErrWebhookNotFound},
		{"unsubscribe twice", func() error { return c.Unsubscribe(ctx, "typed", "sub_nope") }, client.ErrWebhookNotFound},
		{"rotate no such subscription", func() error { _, err := c.RotateSecret(ctx, "typed", "sub_nope"); return err }, client.ErrWebhookNotFound},
		{"no such delivery", func() error { _, err := c.Delivery(ctx, "typed", sub.ID, "nope"); return err }, client.ErrDeliveryNotFound},
		{"redeliver no such delivery", func() error { _, err := c.Redeliver(ctx, "typed", sub.ID, "nope"); return err }, client.ErrDeliveryNotFound},
		{"a limit over 500", func() error { _, err := c.Deliveries(ctx, "typed", sub.ID, 501); return err }, client.ErrInvalidRequest},
		{"a wrong candidate token", func() error { _, err := c.CandidateDeliveries(ctx, "typed", "a", "ect_wrong", 0); return err }, client.ErrTokenMismatch},
		{"no candidate token", func() error { _, err := c.CandidateDeliveries(ctx, "typed", "a", "", 0); return err }, client.ErrCandidateTokenMissing},
		{"a candidate without a webhook", func() error { _, err := c.RedeliverCandidate(ctx, "typed", "a", tok, "nope"); return err }, client.ErrWebhookNotFound},
		{"a subscription without a URL", func() error { _, err := c.Subscribe(ctx, "typed", client.SubscriptionRequest{}); return err }, client.ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSubscribeRefusesALoopbackURLUnlessAllowed(t *testing.T) {
	gw := newGateway(t)
	_, err := client.New(gw.URL).Subscribe(context.Background(), "hooks", client.SubscriptionRequest{URL: "http://127.0.0.1:9/hook"})
	var p *client.Problem
	if !errors.Is(err, client.ErrDestinationRefused) || !errors.As(err, &p) || p.Status != http.StatusUnprocessableEntity {
		t.Fatalf("subscribing a loopback URL: %v, want ErrDestinationRefused", err)
	}
}

func TestHealthAndReadyOfAServingGateway(t *testing.T) {
	gw := newGateway(t)
	ctx := context.Background()
	c := client.New(gw.URL)
	if h, err := c.Health(ctx); err != nil || h.Status != "ok" {
		t.Fatalf("health: %+v, %v", h, err)
	}
	if h, err := c.Ready(ctx); err != nil || h.Status != "ready" || h.Checks["backend"] != "ok" {
		t.Fatalf("ready: %+v, %v", h, err)
	}
}

// An embedded cluster member whose peers never come waits for them: it
// lives (Health) but is not ready, and Ready says why.
func TestReadyIsUnavailableWhileTheBackendStarts(t *testing.T) {
	dir := t.TempDir()
	gw := newStartingGateway(t, "--backend-kind", "embedded", "--embedded-data-dir", dir,
		"--embedded-server-name", "a", "--embedded-cluster-listen", "127.0.0.1:0",
		"--embedded-routes", silentAddr(t)+","+silentAddr(t))
	ctx := context.Background()
	c := client.New(gw.URL)
	if h, err := c.Health(ctx); err != nil || h.Status != "ok" {
		t.Fatalf("health while starting: %+v, %v", h, err)
	}
	_, err := c.Ready(ctx)
	var p *client.Problem
	if !errors.Is(err, client.ErrUnavailable) || !errors.As(err, &p) || p.Status != http.StatusServiceUnavailable {
		t.Fatalf("ready while starting: %v, want ErrUnavailable", err)
	}
	var checks map[string]string
	if err := json.Unmarshal(p.Ext["checks"], &checks); err != nil || checks["backend"] != "starting" {
		t.Fatalf("ready while starting: checks %s, want backend starting", p.Ext["checks"])
	}
}
