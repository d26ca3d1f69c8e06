package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers of a delivery: its id (stable across
// retries: drop duplicates by it), its time, and its signatures.
const (
	WebhookIDHeader        = "webhook-id"
	WebhookTimestampHeader = "webhook-timestamp"
	WebhookSignatureHeader = "webhook-signature"
)

// DefaultWebhookTolerance is how far a delivery's webhook-timestamp may be
// from the receiver's clock, either way, for ReadWebhook to accept it.
const DefaultWebhookTolerance = 5 * time.Minute

// maxWebhookBody caps the body ReadWebhook reads; elector's events are a
// few hundred bytes.
const maxWebhookBody = 1 << 20

// Errors of webhook verification.
var (
	ErrWebhookSecret    = errors.New("elector: invalid webhook secret")
	ErrWebhookHeaders   = errors.New("elector: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrWebhookTimestamp = errors.New("elector: webhook-timestamp is not unix seconds")
	ErrWebhookTooOld    = errors.New("elector: webhook-timestamp outside the tolerance")
	ErrWebhookNoMatch   = errors.New("elector: no signature matches the webhook")
)

// ReadWebhook reads and verifies a webhook delivery of elector (a
// subscription's or a candidate's own) and returns its event, whose ID is
// the delivery's webhook-id. secrets are the subscription's signing
// secrets (two while one is rotated). It reads the body (up to 1 MiB) and
// checks it with VerifyWebhook at time.Now and DefaultWebhookTolerance;
// answer a delivery it refuses with a 4xx, and one it accepts with a 2xx
// once the event is acted on. Deliveries are retried, so drop one whose ID
// was seen, and act only on terms newer than one acted on.
//
//	http.HandleFunc("/elector", func(w http.ResponseWriter, r *http.Request) {
//		ev, err := client.ReadWebhook(r, secret)
//		if err != nil {
//			http.Error(w, err.Error(), http.StatusUnauthorized)
//			return
//		}
//		log.Println(ev.Type, ev.Data.Election, ev.Data.Term)
//	})
//
// Errors: those of VerifyWebhook, the body's read error, or one saying
// the verified body is not an event.
func ReadWebhook(r *http.Request, secrets ...string) (Event, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil {
		return Event{}, fmt.Errorf("elector: read webhook: %w", err)
	}
	if len(body) > maxWebhookBody {
		return Event{}, fmt.Errorf("elector: webhook body over %d bytes", maxWebhookBody)
	}
	if err := VerifyWebhook(secrets, r.Header, body, time.Now(), DefaultWebhookTolerance); err != nil {
		return Event{}, err
	}
	id := r.Header.Get(WebhookIDHeader)
	return decodeEvent(frame{id: id, hasID: true, data: string(body)})
}

// VerifyWebhook checks a delivery as the Standard Webhooks specification
// says: the three headers must be present, webhook-timestamp within
// tolerance of now either way (DefaultWebhookTolerance when tolerance is
// 0, against replays), and one of the v1 signatures in webhook-signature
// must be the HMAC-SHA256 of "id.timestamp.body" under one of secrets
// (whsec_ and the base64 of the key; the prefix may be left out),
// compared in constant time. Pass the body exactly as received.
//
// Errors: ErrWebhookHeaders, ErrWebhookTimestamp, ErrWebhookTooOld,
// ErrWebhookSecret, ErrWebhookNoMatch.
func VerifyWebhook(secrets []string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, tsText, sigs := h.Get(WebhookIDHeader), h.Get(WebhookTimestampHeader), h.Get(WebhookSignatureHeader)
	if id == "" || tsText == "" || sigs == "" {
		return ErrWebhookHeaders
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil || ts < 0 {
		return ErrWebhookTimestamp
	}
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	tol := int64(tolerance / time.Second)
	if d := now.Unix() - ts; d > tol || d < -tol {
		return ErrWebhookTooOld
	}
	if len(secrets) == 0 {
		return fmt.Errorf("%w: none given", ErrWebhookSecret)
	}
	macs := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil {
			return fmt.Errorf("%w: not whsec_ and base64", ErrWebhookSecret)
		}
		// elector's secrets hold 24 to 64 bytes: a shorter one was cut
		// short on its way here.
		if len(key) < 24 || len(key) > 64 {
			return fmt.Errorf("%w: %d bytes, want 24 to 64", ErrWebhookSecret, len(key))
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
		m.Write(body)
		macs = append(macs, m.Sum(nil))
	}
	for _, sig := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			continue
		}
		for _, want := range macs {
			if hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrWebhookNoMatch
}
