package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// capture is what elector's TestCaptureDeliveriesForExamples writes: the
// deliveries of one subscription from a real gateway (node-a leads in term
// 1, resigns, node-b leads in term 2) and the subscription's secret.
type capture struct {
	Secret     string `json:"secret"`
	Deliveries []struct {
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	} `json:"deliveries"`
}

// loadCapture reads the file ELECTOR_EXAMPLES_CAPTURE names; without it
// the test is skipped, except in CI, which must capture first.
func loadCapture(t *testing.T) capture {
	t.Helper()
	path := os.Getenv("ELECTOR_EXAMPLES_CAPTURE")
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("ELECTOR_EXAMPLES_CAPTURE is not set: .ci/run captures deliveries from a real gateway first")
		}
		t.Skip("ELECTOR_EXAMPLES_CAPTURE not set; run elector's TestCaptureDeliveriesForExamples with it first")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c capture
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Deliveries) != 3 {
		t.Fatalf("%d deliveries captured; want 3", len(c.Deliveries))
	}
	return c
}

func newTestReceiver(t *testing.T, secret string) *Receiver {
	t.Helper()
	r, err := NewReceiver([]string{secret}, NewMemoryStore(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// deliver hands one delivery to r as a function URL request.
func deliver(t *testing.T, r *Receiver, headers map[string]string, body string) (int, Outcome) {
	t.Helper()
	res, err := r.Handle(context.Background(), events.LambdaFunctionURLRequest{Headers: headers, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	var o Outcome
	if err := json.Unmarshal([]byte(res.Body), &o); err != nil {
		t.Fatalf("answer %q: %v", res.Body, err)
	}
	return res.StatusCode, o
}

// TestReceiverWithCapturedDeliveries replays the deliveries of a real
// gateway: in order they are applied; again, they are duplicates; after a
// later term, an earlier one is stale; tampered, unsigned or wrongly keyed
// deliveries are refused.
func TestReceiverWithCapturedDeliveries(t *testing.T) {
	c := loadCapture(t)
	d := c.Deliveries

	r := newTestReceiver(t, c.Secret)
	wants := []string{"node-a leads billing in term 1", "node-a stopped leading billing in term 1 (resigned)", "node-b leads billing in term 2"}
	for i, want := range wants {
		if code, o := deliver(t, r, d[i].Headers, d[i].Body); code != http.StatusOK || o.Result != "applied" || o.Action != want {
			t.Fatalf("delivery %d: %d %+v; want applied: %s", i, code, o, want)
		}
	}
	if code, o := deliver(t, r, d[2].Headers, d[2].Body); code != http.StatusOK || o.Result != "duplicate" {
		t.Fatalf("the same delivery again: %d %+v; want duplicate", code, o)
	}

	// A late delivery of term 1 after term 2 began.
	r = newTestReceiver(t, c.Secret)
	if code, o := deliver(t, r, d[2].Headers, d[2].Body); code != http.StatusOK || o.Result != "applied" {
		t.Fatalf("term 2 first: %d %+v", code, o)
	}
	for _, i := range []int{0, 1} {
		if code, o := deliver(t, r, d[i].Headers, d[i].Body); code != http.StatusOK || o.Result != "stale" {
			t.Fatalf("delivery %d after term 2: %d %+v; want stale", i, code, o)
		}
	}

	// A function URL may hand the body over base64-encoded.
	r = newTestReceiver(t, c.Secret)
	res, err := r.Handle(context.Background(), events.LambdaFunctionURLRequest{
		Headers: d[0].Headers, Body: base64.StdEncoding.EncodeToString([]byte(d[0].Body)), IsBase64Encoded: true,
	})
	if err != nil || res.StatusCode != http.StatusOK || !strings.Contains(res.Body, `"applied"`) {
		t.Fatalf("base64 body: %v %+v", err, res)
	}

	unsigned := map[string]string{"webhook-id": d[0].Headers["webhook-id"], "webhook-timestamp": d[0].Headers["webhook-timestamp"]}
	stranger := newTestReceiver(t, "whsec_"+base64.StdEncoding.EncodeToString([]byte("another secret entirely, 32byte")))
	for name, try := range map[string]func() (int, Outcome){
		"tampered body": func() (int, Outcome) { return deliver(t, newTestReceiver(t, c.Secret), d[0].Headers, d[0].Body+" ") },
		"no signature":  func() (int, Outcome) { return deliver(t, newTestReceiver(t, c.Secret), unsigned, d[0].Body) },
		"wrong secret":  func() (int, Outcome) { return deliver(t, stranger, d[0].Headers, d[0].Body) },
	} {
		if code, o := try(); code != http.StatusUnauthorized || o.Result != "" {
			t.Errorf("%s: %d %+v; want 401", name, code, o)
		}
	}
}

// TestVerifyRefusesOldTimestamps: a delivery signed correctly but sent more
// than Tolerance away from the clock is refused as a replay.
func TestVerifyRefusesOldTimestamps(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	body := []byte(`{"type":"leader.begin"}`)
	now := time.Unix(1_800_000_000, 0)
	for _, tt := range []struct {
		name string
		age  time.Duration
		want error
	}{
		{"fresh", time.Second, nil},
		{"old", Tolerance + time.Second, ErrTimestamp},
		{"future", -Tolerance - time.Second, ErrTimestamp},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := strconv.FormatInt(now.Add(-tt.age).Unix(), 10)
			mac := hmac.New(sha256.New, key)
			mac.Write([]byte("msg_1." + ts + "." + string(body)))
			sig := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
			if err := Verify([][]byte{key}, "msg_1", ts, sig, body, now); !errors.Is(err, tt.want) {
				t.Fatalf("Verify: %v; want %v", err, tt.want)
			}
		})
	}
}
