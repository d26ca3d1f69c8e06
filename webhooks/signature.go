package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/electorhq/elector/client"
)

// The Standard Webhooks headers that carry a delivery's id, time and
// signatures.
const (
	HeaderID        = client.WebhookIDHeader
	HeaderTimestamp = client.WebhookTimestampHeader
	HeaderSignature = client.WebhookSignatureHeader
)

// SecretPrefix starts every secret elector issues.
const SecretPrefix = "whsec_"

// Bounds of a secret's key, in bytes before base64.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// DefaultTolerance is how far a webhook-timestamp may be from the receiver's
// clock, either way, for Verify to accept it.
const DefaultTolerance = client.DefaultWebhookTolerance

// Errors of signing and verification. They are the Go client's: Verify is
// client.VerifyWebhook, so that the gateway's tests and receivers written
// with the client agree on what a valid delivery is.
var (
	ErrInvalidSecret    = client.ErrWebhookSecret
	ErrMissingHeaders   = client.ErrWebhookHeaders
	ErrInvalidTimestamp = client.ErrWebhookTimestamp
	ErrTimestampTooOld  = client.ErrWebhookTooOld
	ErrNoMatch          = client.ErrWebhookNoMatch
)

// NewSecret returns a fresh secret: "whsec_" and the standard base64 of 32
// random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// secretKey returns the HMAC key of a secret: the base64 after "whsec_"
// (the prefix may be left out, as Standard Webhooks libraries allow).
// Errors: ErrInvalidSecret.
func secretKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return nil, fmt.Errorf("%w: not whsec_ and base64", ErrInvalidSecret)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("%w: %d bytes, want %d to %d", ErrInvalidSecret, len(key), MinSecretBytes, MaxSecretBytes)
	}
	return key, nil
}

// ValidateSecret checks that secret is whsec_ and the base64 of 24 to 64
// bytes. Errors: ErrInvalidSecret.
func ValidateSecret(secret string) error {
	_, err := secretKey(secret)
	return err
}

// mac is the raw HMAC-SHA256 of "id.timestamp.body" under key.
func mac(key []byte, id string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(strconv.FormatInt(ts, 10)))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Sign returns the webhook-signature value for a message: one
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" per secret, separated by
// spaces (several during a secret rotation). Errors: ErrInvalidSecret.
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", fmt.Errorf("%w: none given", ErrInvalidSecret)
	}
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := secretKey(s)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body)))
	}
	return strings.Join(sigs, " "), nil
}

// SetHeaders signs body and sets the three Standard Webhooks headers on h.
// Errors: ErrInvalidSecret.
func SetHeaders(h http.Header, secrets []string, id string, ts time.Time, body []byte) error {
	sig, err := Sign(secrets, id, ts, body)
	if err != nil {
		return err
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return nil
}

// Verify checks a received webhook for a Go receiver: the headers must be
// present, webhook-timestamp within tolerance of now (either way;
// DefaultTolerance if tolerance is 0), and one of the v1 signatures of
// webhook-signature must be that of one of secrets (compared in constant
// time). Pass the body exactly as received. Errors: ErrMissingHeaders,
// ErrInvalidTimestamp, ErrTimestampTooOld, ErrInvalidSecret, ErrNoMatch.
//
//	body, _ := io.ReadAll(r.Body)
//	if err := webhooks.Verify([]string{secret}, r.Header, body, time.Now(), 0); err != nil {
//		http.Error(w, "bad signature", http.StatusUnauthorized)
//		return
//	}
func Verify(secrets []string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	return client.VerifyWebhook(secrets, h, body, now, tolerance)
}
