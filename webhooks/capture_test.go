package webhooks

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
)

// captured is a webhook request as elector sent it, for an independent
// verifier (webhooks/testdata/verify-node).
type captured struct {
	Secrets []string          `json:"secrets"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// TestCaptureForIndependentVerification has a real Service deliver a real
// event, during a secret rotation (two signatures), to a receiver on
// loopback; it verifies the request with Verify and, when
// ELECTOR_WEBHOOK_CAPTURE names a file, writes the request there for
// .ci/run to check with the npm standardwebhooks package.
func TestCaptureForIndependentVerification(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t, nil)
	s, _ := e.service(testConfig())
	ep, oldSecret := subscribe(t, s, "capture", rc.srv.URL)
	_, newSecret, err := s.RotateSecret(context.Background(), "capture", ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.campaign("capture", "node-a")
	eventually.True(t, 5*time.Second, "a delivery", func() bool { return len(rc.successes()) > 0 })
	r := rc.successes()[0]
	ts, _ := strconv.ParseInt(r.Timestamp, 10, 64)
	for _, secret := range []string{oldSecret, newSecret} {
		if err := Verify([]string{secret}, r.Header, r.Body, time.Unix(ts, 0), 0); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	}
	path := os.Getenv("ELECTOR_WEBHOOK_CAPTURE")
	if path == "" {
		return
	}
	c := captured{
		Secrets: []string{oldSecret, newSecret},
		Headers: map[string]string{HeaderID: r.ID, HeaderTimestamp: r.Timestamp, HeaderSignature: r.Signature},
		Body:    string(r.Body),
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
