package conformance

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// capturedWebhook is one delivery as the suite's receiver got it, and the
// secret of its subscription.
type capturedWebhook struct {
	Election string
	Secret   string
	Headers  map[string]string // lower-case names, first values
	Body     string
}

// captureWebhook subscribes a receiver the suite runs to an election of
// gw, makes a candidate lead there, and returns the leader.begin delivery
// the receiver got (answering it 204).
func captureWebhook(t *testing.T, gw *gatewayProc) capturedWebhook {
	t.Helper()
	const election = "conformance-webhook"
	got := make(chan capturedWebhook, 8)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := capturedWebhook{Election: election, Headers: map[string]string{}, Body: string(body)}
		for k, v := range r.Header {
			c.Headers[strings.ToLower(k)] = v[0]
		}
		select {
		case got <- c:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)

	ctx := context.Background()
	c := client.New(gw.URL)
	sub, err := c.Subscribe(ctx, election, client.SubscriptionRequest{URL: receiver.URL + "/elector", Types: []string{client.EventLeaderBegin}})
	if err != nil || sub.Secret == "" {
		t.Fatalf("subscribe the receiver: %+v, %v", sub, err)
	}
	_, token, err := c.Campaign(ctx, election, client.CampaignRequest{ID: "hooked", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Resign(ctx, election, "hooked", token)
	select {
	case d := <-got:
		d.Secret = sub.Secret
		return d
	case <-time.After(waitLimit):
		t.Fatalf("no delivery reached the receiver within %s", waitLimit)
	}
	return capturedWebhook{}
}
