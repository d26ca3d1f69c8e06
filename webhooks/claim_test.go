package webhooks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestClaimIsExtendedBeforeAnAttemptItWouldNotOutlast(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	kv := e.gw.KV()
	cfg := testConfig()
	rt := cfg.RequestTimeout
	now := time.Now()
	clock := func() time.Time { return now } // this test's goroutine alone reads and moves it
	cfg.Replica = "first"
	s := New(e.gw, kv, cfg)
	s.now = clock
	ep := Endpoint{ID: "sub_claim"}
	c, err := s.claim(ctx, ep)
	if err != nil || c == nil {
		t.Fatalf("claim: %v, %v", c, err)
	}
	if !c.holds(rt) {
		t.Fatal("a fresh claim does not hold for an attempt")
	}

	now = now.Add(cfg.ClaimTTL - rt/2) // less than an attempt is left
	if c.holds(rt) {
		t.Fatal("the claim holds for an attempt it would not outlast")
	}
	if err := c.holdFor(ctx, rt); err != nil {
		t.Fatalf("holdFor: %v", err)
	}
	rec, _, err := getJSON[cursorRecord](ctx, kv, cursorKey(ep.ID))
	if err != nil || rec.Replica != "first" || !rec.Until.After(now.Add(rt)) {
		t.Fatalf("cursor record %+v, %v: want held by first past %s", rec, err, now.Add(rt))
	}

	// Once the claim has run out another replica takes the endpoint, and
	// the first may not start another attempt.
	now = now.Add(cfg.ClaimTTL + time.Second)
	cfg.Replica = "second"
	other := New(e.gw, kv, cfg)
	other.now = clock
	if oc, err := other.claim(ctx, ep); err != nil || oc == nil {
		t.Fatalf("second's claim after expiry: %v, %v", oc, err)
	}
	if err := c.holdFor(ctx, rt); !errors.Is(err, errClaimLost) {
		t.Fatalf("first's holdFor after the takeover: %v, want errClaimLost", err)
	}
}

func TestClaimTTLIsAtLeastTwiceTheRequestTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		request, claim time.Duration
		wantErr        string
		wantClaimTTL   time.Duration // ClaimTTL after defaults, when valid
	}{
		{"defaults", 0, 0, "", DefaultClaimTTL},
		{"exactly twice", 5 * time.Second, 10 * time.Second, "", 10 * time.Second},
		{"a long request timeout lengthens the default claim", time.Minute, 0, "", 2 * time.Minute},
		{"shorter than twice", 10 * time.Second, 15 * time.Second, "must be at least 2× RequestTimeout (10s)", 0},
		{"shorter than twice the default request timeout", 0, 19 * time.Second, "must be at least 2× RequestTimeout (10s)", 0},
		{"below a second", 0, 500 * time.Millisecond, "below 1s", 0},
	}
	for _, tt := range tests {
		cfg := Config{RequestTimeout: tt.request, ClaimTTL: tt.claim}
		err := cfg.Validate()
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			} else if got := cfg.withDefaults().ClaimTTL; got != tt.wantClaimTTL {
				t.Errorf("%s: claim ttl %s, want %s", tt.name, got, tt.wantClaimTTL)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.wantErr)
		}
	}
}
