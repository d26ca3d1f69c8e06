package client_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// The example of the Standard Webhooks specification.
func TestVerifyWebhookAcceptsTheSpecificationExample(t *testing.T) {
	h := http.Header{}
	h.Set(client.WebhookIDHeader, "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set(client.WebhookTimestampHeader, "1614265330")
	h.Set(client.WebhookSignatureHeader, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	err := client.VerifyWebhook([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, h, []byte(`{"test": 2432232314}`), time.Unix(1614265330, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
}

// webhookRequest is a delivery of body signed with secret at ts, as a
// receiver gets it.
func webhookRequest(secret, id string, ts time.Time, body string) *http.Request {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "." + body))
	r := httptest.NewRequest(http.MethodPost, "/elector", strings.NewReader(body))
	r.Header.Set(client.WebhookIDHeader, id)
	r.Header.Set(client.WebhookTimestampHeader, strconv.FormatInt(ts.Unix(), 10))
	r.Header.Set(client.WebhookSignatureHeader, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	return r
}

func TestReadWebhook(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a key of thirty-two bytes, here."))
	const body = `{"type":"leader.begin","timestamp":"2026-11-22T10:00:00.123456Z","data":{"election":"billing","term":42,` +
		`"candidate":{"id":"node-a"},"previous":{"id":"node-b","term":41},"reason":"expired"}}`
	now := time.Now()
	tests := []struct {
		name string
		req  *http.Request
		want error
	}{
		{"a delivery", webhookRequest(secret, "1234-0", now, body), nil},
		{"body changed", func() *http.Request {
			r := webhookRequest(secret, "1234-0", now, body)
			r.Body = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Replace(body, "42", "43", 1))).Body
			return r
		}(), client.ErrWebhookNoMatch},
		{"another secret", webhookRequest("whsec_"+base64.StdEncoding.EncodeToString([]byte("another key of thirty-two bytes.")), "1234-0", now, body), client.ErrWebhookNoMatch},
		{"replayed ten minutes later", webhookRequest(secret, "1234-0", now.Add(-10*time.Minute), body), client.ErrWebhookTooOld},
		{"no signature", func() *http.Request {
			r := webhookRequest(secret, "1234-0", now, body)
			r.Header.Del(client.WebhookSignatureHeader)
			return r
		}(), client.ErrWebhookHeaders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := client.ReadWebhook(tt.req, secret)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("ReadWebhook: %v, want %v", err, tt.want)
			}
			if tt.want != nil {
				return
			}
			if ev.ID != "1234-0" || ev.Type != client.EventLeaderBegin || ev.Data.Term != 42 || ev.Data.Candidate == nil ||
				ev.Data.Candidate.ID != "node-a" || ev.Data.Previous == nil || ev.Data.Previous.Term != 41 || ev.Data.Reason != "expired" {
				t.Fatalf("event %+v", ev)
			}
		})
	}
}

func TestReadWebhookRefusesABadSecret(t *testing.T) {
	r := webhookRequest("whsec_"+base64.StdEncoding.EncodeToString(make([]byte, 32)), "1", time.Now(), "{}")
	for _, secret := range []string{"whsec_%%%", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		if _, err := client.ReadWebhook(r, secret); !errors.Is(err, client.ErrWebhookSecret) {
			t.Errorf("secret %q: %v, want ErrWebhookSecret", secret, err)
		}
	}
	if _, err := client.ReadWebhook(r); !errors.Is(err, client.ErrWebhookSecret) {
		t.Errorf("no secret: %v, want ErrWebhookSecret", err)
	}
}
