package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a delivery's webhook-timestamp may be from the
// clock: older deliveries are refused as replays.
const Tolerance = 5 * time.Minute

// Errors of Verify.
var (
	ErrMissingHeaders = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrTimestamp      = errors.New("webhook: timestamp missing or too far from now")
	ErrSignature      = errors.New("webhook: no signature matches")
)

// parseSecret decodes a Standard Webhooks secret, "whsec_" and base64.
func parseSecret(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("webhook: secret is not whsec_ and base64")
	}
	return key, nil
}

// Verify checks a delivery as the Standard Webhooks spec says: one of the
// space-separated "v1,<base64>" signatures must be the HMAC-SHA256, under
// one of keys, of id + "." + timestamp + "." + body, and the timestamp
// must be within Tolerance of now. Errors: ErrMissingHeaders,
// ErrTimestamp, ErrSignature.
func Verify(keys [][]byte, id, timestamp, signatures string, body []byte, now time.Time) error {
	if id == "" || timestamp == "" || signatures == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return ErrTimestamp
	}
	for _, key := range keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + timestamp + "."))
		mac.Write(body)
		want := mac.Sum(nil)
		for sig := range strings.FieldsSeq(signatures) {
			v, b64, ok := strings.Cut(sig, ",")
			if !ok || v != "v1" {
				continue
			}
			got, err := base64.StdEncoding.DecodeString(b64)
			if err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrSignature
}
