package elector_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/internal/servertest"
)

// envExamplesCapture names the file TestCaptureDeliveriesForExamples
// writes, for .ci/run to replay against the receivers under examples/.
const envExamplesCapture = "ELECTOR_EXAMPLES_CAPTURE"

// examplesCapture is what the receivers under examples/ are tested with:
// the deliveries of one subscription, as a real gateway sent them, and the
// subscription's secret.
type examplesCapture struct {
	Secret     string             `json:"secret"`
	Deliveries []capturedDelivery `json:"deliveries"`
}

type capturedDelivery struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// TestCaptureDeliveriesForExamples runs a real gateway (embedded NATS, the
// HTTP API and webhook delivery) with a subscription to leader.begin and
// leader.end of the election billing, and plays a handover: node-a leads
// (term 1), node-b joins, node-a resigns and node-b leads (term 2). It
// checks the three deliveries the subscriber gets and, when
// ELECTOR_EXAMPLES_CAPTURE names a file, writes them there with the secret.
func TestCaptureDeliveriesForExamples(t *testing.T) {
	// The receiver is on loopback, which only local development allows.
	srv := servertest.Start(t, servertest.Embedded(), servertest.AllowPrivateWebhooks())

	var mu sync.Mutex
	var got []capturedDelivery
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, capturedDelivery{
			Headers: map[string]string{
				"webhook-id":        r.Header.Get("webhook-id"),
				"webhook-timestamp": r.Header.Get("webhook-timestamp"),
				"webhook-signature": r.Header.Get("webhook-signature"),
				"content-type":      r.Header.Get("Content-Type"),
			},
			Body: string(body),
		})
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)

	post := func(path string, body any, header ...string) map[string]any {
		t.Helper()
		j, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(j))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		if body == nil {
			req.Method = http.MethodDelete
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		if res.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %v", req.Method, path, res.StatusCode, out)
		}
		return out
	}
	sub := post("/v1/elections/billing/subscriptions", map[string]any{"url": receiver.URL, "types": []string{"leader.begin", "leader.end"}})
	secret, _ := sub["secret"].(string)
	tokA, _ := post("/v1/elections/billing/candidates", map[string]any{"id": "node-a", "ttl": "1m"})["token"].(string)
	post("/v1/elections/billing/candidates", map[string]any{"id": "node-b", "ttl": "1m"})
	post("/v1/elections/billing/candidates/node-a", nil, api.TokenHeader, tokA)

	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 deliveries after 20s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	c := examplesCapture{Secret: secret, Deliveries: append([]capturedDelivery(nil), got[:3]...)}
	mu.Unlock()
	want := []struct {
		typ, id string
		term    float64
	}{{"leader.begin", "node-a", 1}, {"leader.end", "node-a", 1}, {"leader.begin", "node-b", 2}}
	for i, d := range c.Deliveries {
		var ev struct {
			Type string
			Data struct {
				Term      float64
				Candidate struct{ ID string }
			}
		}
		if err := json.Unmarshal([]byte(d.Body), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != want[i].typ || ev.Data.Candidate.ID != want[i].id || ev.Data.Term != want[i].term || d.Headers["webhook-id"] == "" {
			t.Fatalf("delivery %d: %s; want %s of %s in term %v", i, d.Body, want[i].typ, want[i].id, want[i].term)
		}
	}
	path := os.Getenv(envExamplesCapture)
	if path == "" {
		return
	}
	out, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}
