package webhooks

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The example of the Standard Webhooks specification.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesTheSpecificationExample(t *testing.T) {
	got, err := Sign([]string{specSecret}, specID, time.Unix(specTimestamp, 0), []byte(specBody))
	if err != nil {
		t.Fatal(err)
	}
	if got != specSignature {
		t.Fatalf("signature %q, want %q", got, specSignature)
	}
}

func TestNewSecretIsValidAndFresh(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	if a == b || !strings.HasPrefix(a, SecretPrefix) {
		t.Fatalf("secrets %q, %q", a, b)
	}
	if err := ValidateSecret(a); err != nil {
		t.Fatal(err)
	}
}

func headers(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	if id != "" {
		h.Set(HeaderID, id)
	}
	if ts != 0 {
		h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	}
	if sig != "" {
		h.Set(HeaderSignature, sig)
	}
	return h
}

func TestVerify(t *testing.T) {
	now := time.Unix(specTimestamp, 0)
	other := NewSecret()
	short := SecretPrefix + base64.StdEncoding.EncodeToString(make([]byte, 16))
	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		now     time.Time
		want    error
	}{
		{"spec example", []string{specSecret}, headers(specID, specTimestamp, specSignature), specBody, now, nil},
		{"secret without prefix", []string{strings.TrimPrefix(specSecret, SecretPrefix)}, headers(specID, specTimestamp, specSignature), specBody, now, nil},
		{"one of several secrets", []string{other, specSecret}, headers(specID, specTimestamp, specSignature), specBody, now, nil},
		{"one of several signatures", []string{specSecret}, headers(specID, specTimestamp, "v1,AAAA "+specSignature), specBody, now, nil},
		{"unknown versions are skipped", []string{specSecret}, headers(specID, specTimestamp, "v1a,xyz v2,abc "+specSignature), specBody, now, nil},
		{"4m59s late", []string{specSecret}, headers(specID, specTimestamp, specSignature), specBody, now.Add(299 * time.Second), nil},
		{"6 minutes late", []string{specSecret}, headers(specID, specTimestamp, specSignature), specBody, now.Add(6 * time.Minute), ErrTimestampTooOld},
		{"6 minutes early", []string{specSecret}, headers(specID, specTimestamp, specSignature), specBody, now.Add(-6 * time.Minute), ErrTimestampTooOld},
		{"body changed", []string{specSecret}, headers(specID, specTimestamp, specSignature), `{"test": 2432232315}`, now, ErrNoMatch},
		{"id changed", []string{specSecret}, headers(specID+"x", specTimestamp, specSignature), specBody, now, ErrNoMatch},
		{"timestamp changed", []string{specSecret}, headers(specID, specTimestamp+1, specSignature), specBody, now, ErrNoMatch},
		{"wrong secret", []string{other}, headers(specID, specTimestamp, specSignature), specBody, now, ErrNoMatch},
		{"signature not base64", []string{specSecret}, headers(specID, specTimestamp, "v1,!!!"), specBody, now, ErrNoMatch},
		{"no id", []string{specSecret}, headers("", specTimestamp, specSignature), specBody, now, ErrMissingHeaders},
		{"no timestamp", []string{specSecret}, headers(specID, 0, specSignature), specBody, now, ErrMissingHeaders},
		{"no signature", []string{specSecret}, headers(specID, specTimestamp, ""), specBody, now, ErrMissingHeaders},
		{"timestamp not a number", []string{specSecret}, func() http.Header {
			h := headers(specID, specTimestamp, specSignature)
			h.Set(HeaderTimestamp, "1614265330.5")
			return h
		}(), specBody, now, ErrInvalidTimestamp},
		{"secret too short", []string{short}, headers(specID, specTimestamp, specSignature), specBody, now, ErrInvalidSecret},
		{"secret not base64", []string{"whsec_%%%"}, headers(specID, specTimestamp, specSignature), specBody, now, ErrInvalidSecret},
		{"no secrets", nil, headers(specID, specTimestamp, specSignature), specBody, now, ErrInvalidSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Verify(tt.secrets, tt.h, []byte(tt.body), tt.now, 0)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("Verify: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSetHeadersSignsWithEverySecret(t *testing.T) {
	oldS, newS := NewSecret(), NewSecret()
	h := http.Header{}
	ts := time.Now()
	if err := SetHeaders(h, []string{newS, oldS}, "42", ts, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(h.Get(HeaderSignature))); n != 2 {
		t.Fatalf("%d signatures, want 2", n)
	}
	for _, s := range []string{oldS, newS} {
		if err := Verify([]string{s}, h, []byte("{}"), ts, 0); err != nil {
			t.Errorf("verify with one of the secrets: %v", err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(specID, strconv.Itoa(specTimestamp), specSignature, []byte(specBody))
	f.Add("", "x", "v1,", []byte{})
	f.Add("a", "-1", "v1,AAAA v1,", []byte("\x00"))
	now := time.Unix(specTimestamp, 0)
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		err := Verify([]string{specSecret}, h, body, now, 0)
		if err != nil {
			return
		}
		// Accepted: it must be the signature of exactly this message.
		n, _ := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
		want, _ := Sign([]string{specSecret}, h.Get(HeaderID), time.Unix(n, 0), body)
		if !strings.Contains(" "+h.Get(HeaderSignature)+" ", " "+want+" ") {
			t.Fatalf("accepted %q for id %q ts %q body %q, whose signature is %q", sig, id, ts, body, want)
		}
	})
}
