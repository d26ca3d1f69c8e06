package webhooks

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

func TestRefusal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ip      string
		refused bool
	}{
		{"127.0.0.1", true}, {"10.1.2.3", true}, {"172.16.0.1", true}, {"172.31.255.255", true}, {"192.168.1.1", true},
		{"169.254.169.254", true}, {"100.64.0.1", true}, {"0.0.0.0", true}, {"224.0.0.1", true}, {"255.255.255.255", true},
		{"::1", true}, {"::", true}, {"fd00::1", true}, {"fe80::1", true}, {"ff02::1", true}, {"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true}, {"64:ff9b::a00:1", true}, {"64:ff9b:1::a9fe:a9fe", true},
		{"::1%lo", true}, {"::1%eth0", true}, {"fe80::1%lo", true}, {"2606:4700::1111%eth0", true}, {"::ffff:127.0.0.1%lo", true},
		{"::127.0.0.1", true}, {"::ffff:0:7f00:1", true}, {"2002:7f00:1::1", true}, {"2002:a9fe:a9fe::", true}, {"100::1", true},
		{"2002:808:808::1", false},
		{"8.8.8.8", false}, {"172.32.0.1", false}, {"100.128.0.1", false}, {"2606:4700::1111", false}, {"1.1.1.1", false},
	}
	for _, tt := range tests {
		if got := refusal(netip.MustParseAddr(tt.ip)) != ""; got != tt.refused {
			t.Errorf("%s: refused %v, want %v", tt.ip, got, tt.refused)
		}
	}
}

// fakeResolver answers every name with addrs.
type fakeResolver []netip.Addr

func (f fakeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if len(f) == 0 {
		return nil, errors.New("no such host")
	}
	return f, nil
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	public := fakeResolver{netip.MustParseAddr("93.184.215.14")}
	private := fakeResolver{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.5")}
	tests := []struct {
		name         string
		url          string
		r            Resolver
		allowPrivate bool
		want         error
	}{
		{"public https", "https://hooks.example.com/elector", public, false, nil},
		{"public http with port", "http://hooks.example.com:8080/x?token=1", public, false, nil},
		{"unresolvable now", "https://not-yet.example.com/", fakeResolver{}, false, nil},
		{"loopback literal", "http://127.0.0.1:8080/", public, false, ErrDestinationRefused},
		{"ipv6 loopback", "http://[::1]/", public, false, ErrDestinationRefused},
		{"metadata", "http://169.254.169.254/latest/meta-data/", public, false, ErrDestinationRefused},
		{"localhost", "http://localhost:9000/", public, false, ErrDestinationRefused},
		{"name resolving to private", "https://internal.example.com/", private, false, ErrDestinationRefused},
		{"ftp", "ftp://example.com/", public, false, ErrDestinationRefused},
		{"file", "file:///etc/passwd", public, true, ErrInvalidURL},
		{"relative", "/hooks", public, false, ErrInvalidURL},
		{"user info", "https://u:p@example.com/", public, false, ErrInvalidURL},
		{"zoned loopback", "http://[::1%25lo]:19091/x", public, false, ErrDestinationRefused},
		{"zoned loopback, other interface", "http://[::1%25eth0]/", public, false, ErrDestinationRefused},
		{"zoned link-local", "http://[fe80::1%25lo]/", public, false, ErrDestinationRefused},
		{"zoned public address", "http://[2606:4700::1111%25eth0]/", public, false, ErrDestinationRefused},
		{"escaped IPv4 host", "http://127.0.0.1%25lo/", fakeResolver{}, false, ErrDestinationRefused},
		{"localhost with a dot", "http://localhost./", fakeResolver{}, false, ErrDestinationRefused},
		{"port above 65535", "https://hooks.example.com:99999/", public, false, ErrInvalidURL},
		{"port 0", "https://hooks.example.com:0/", public, false, ErrInvalidURL},
		{"port above 65535, private allowed", "http://127.0.0.1:99999/", public, true, ErrInvalidURL},
		{"port 65535", "https://hooks.example.com:65535/", public, false, nil},
		{"loopback allowed", "http://127.0.0.1:8080/", public, true, nil},
		{"private name allowed", "https://internal.example.com/", private, true, nil},
	}
	for _, tt := range tests {
		err := CheckURL(context.Background(), tt.url, tt.allowPrivate, tt.r)
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestPrivateDestinationsAreRefusedByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	cfg := testConfig()
	cfg.AllowPrivateNetworks = false
	s, _ := e.service(cfg)
	_, _, err := s.CreateSubscription(context.Background(), "guarded", SubscriptionRequest{URL: rc.srv.URL})
	if !errors.Is(err, ErrDestinationRefused) {
		t.Fatalf("subscription to loopback: %v, want ErrDestinationRefused", err)
	}
	if _, err := s.PrepareCandidate(context.Background(), "guarded", CandidateWebhook{URL: rc.srv.URL}); !errors.Is(err, ErrDestinationRefused) {
		t.Fatalf("candidate webhook to loopback: %v, want ErrDestinationRefused", err)
	}

	// An endpoint that got past registration (a name that later resolves
	// to loopback, say) is refused by the dialler, on the address dialled.
	kv := e.gw.KV()
	ep := Endpoint{ID: "sub_rebound", Kind: KindSubscription, Election: "guarded", URL: rc.srv.URL,
		Secrets: []Secret{{Value: NewSecret()}}, CreatedAt: time.Now()}
	if ep.Start, err = s.startCursor(context.Background(), "guarded"); err != nil {
		t.Fatal(err)
	}
	if _, err := createJSON(context.Background(), kv, endpointKey("guarded", ep.ID), ep); err != nil {
		t.Fatal(err)
	}
	s.nudge()
	e.campaign("guarded", "a")
	eventually.True(t, 5*time.Second, "a refused attempt in the log", func() bool {
		ds, _ := s.Deliveries(context.Background(), "guarded", ep.ID, 0)
		return len(ds) > 0 && len(ds[len(ds)-1].Attempts) > 0 && strings.Contains(ds[len(ds)-1].Attempts[0].Error, "destination refused")
	})
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	target := newReceiver(t, nil)
	rc := newReceiver(t, func(_ int, _ *http.Request, w http.ResponseWriter) int {
		w.Header().Set("Location", target.srv.URL)
		return http.StatusTemporaryRedirect
	})
	s, _ := e.service(testConfig())
	ep, _ := subscribe(t, s, "redirect", rc.srv.URL)
	e.campaign("redirect", "a")
	eventually.True(t, 5*time.Second, "attempts answered 307", func() bool { return len(rc.requests()) >= 2 })
	if n := len(target.requests()); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
	ds, _ := s.Deliveries(context.Background(), "redirect", ep.ID, 0)
	a := ds[len(ds)-1].Attempts[0]
	if a.StatusCode != http.StatusTemporaryRedirect || !strings.Contains(a.Error, "redirect") {
		t.Fatalf("attempt %+v, want a failed 307", a)
	}
}

func TestGoneDisablesTheSubscription(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int { return http.StatusGone })
	witness := newReceiver(t, nil)
	s, _ := e.service(testConfig())
	ep, _ := subscribe(t, s, "gone", rc.srv.URL)
	wep, _ := subscribe(t, s, "gone", witness.srv.URL, gateway.EventCandidateJoined)
	e.campaign("gone", "a")
	eventually.True(t, 5*time.Second, "the subscription is disabled", func() bool {
		got, err := s.Subscription(context.Background(), "gone", ep.ID)
		return err == nil && got.Disabled && strings.Contains(got.DisabledReason, "410")
	})
	e.campaign("gone", "b")
	// A healthy subscription of the same election has had b's event: the
	// service has moved past it.
	s.settled(t, wep.ID, 2)
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("%d requests after 410, want 1", n)
	}
}

func TestRetryExhaustionFailsTheDeliveryAndMovesOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, func(n int, _ *http.Request, _ http.ResponseWriter) int {
		if n < 6 { // the first event's 1 + 5 retries
			return http.StatusBadGateway
		}
		return http.StatusOK
	})
	s, _ := e.service(testConfig())
	ep, _ := subscribe(t, s, "exhaust", rc.srv.URL, gateway.EventCandidateJoined)
	e.campaign("exhaust", "a")
	e.campaign("exhaust", "b")
	// Wait on the delivery log, not on the receiver: it counts a request
	// before its answer reaches the worker, which records it after.
	ds := s.settled(t, ep.ID, 2)
	if len(rc.successes()) != 1 || ds[1].Status != StatusFailed || len(ds[1].Attempts) != 6 || ds[0].Status != StatusSucceeded {
		t.Fatalf("log %+v, want the first failed after 6 attempts, the second succeeded", ds)
	}
	// Manual redelivery of the failed one.
	d, err := s.Redeliver(context.Background(), "exhaust", ep.ID, ds[1].ID)
	if err != nil || d.Status != StatusSucceeded || !d.Attempts[len(d.Attempts)-1].Manual {
		t.Fatalf("redeliver: %+v, %v", d, err)
	}
	if got := rc.requests(); got[len(got)-1].ID != ds[1].EventID {
		t.Fatalf("redelivery had webhook-id %s, want %s", got[len(got)-1].ID, ds[1].EventID)
	}
}

func TestRotatedSecretSignsBesideTheNewOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	s, _ := e.service(testConfig())
	ep, oldSecret := subscribe(t, s, "rotate", rc.srv.URL)
	got, newSecret, err := s.RotateSecret(context.Background(), "rotate", ep.ID)
	if err != nil || newSecret == oldSecret || len(got.Secrets) != 2 || got.Secrets[1].ExpiresAt.IsZero() {
		t.Fatalf("rotate: %+v, %v", got.Secrets, err)
	}
	e.campaign("rotate", "a")
	eventually.True(t, 5*time.Second, "a delivery", func() bool { return len(rc.successes()) > 0 })
	r := rc.successes()[0]
	if n := len(strings.Fields(r.Signature)); n != 2 {
		t.Fatalf("%d signatures, want 2 during the overlap", n)
	}
	for _, secret := range []string{oldSecret, newSecret} {
		if err := Verify([]string{secret}, r.Header, r.Body, time.Now(), 0); err != nil {
			t.Errorf("verify: %v", err)
		}
	}
}

func TestNextWait(t *testing.T) {
	t.Parallel()
	id := func(d time.Duration) time.Duration { return d }
	sched := []time.Duration{5 * time.Second, 30 * time.Second}
	tests := []struct {
		name       string
		n          int
		retryAfter time.Duration
		want       time.Duration
		more       bool
	}{
		{"after the first attempt", 1, 0, 5 * time.Second, true},
		{"after the second", 2, 0, 30 * time.Second, true},
		{"schedule exhausted", 3, 0, 0, false},
		{"retry-after longer than the schedule", 1, time.Minute, time.Minute, true},
		{"retry-after shorter than the schedule", 2, time.Second, 30 * time.Second, true},
		{"retry-after capped", 1, 48 * time.Hour, time.Hour, true},
	}
	for _, tt := range tests {
		got, more := nextWait(sched, tt.n, tt.retryAfter, time.Hour, id)
		if got != tt.want || more != tt.more {
			t.Errorf("%s: %s %v, want %s %v", tt.name, got, more, tt.want, tt.more)
		}
	}
	for range 100 {
		if d := jitter(10 * time.Second); d < 8*time.Second || d > 12*time.Second {
			t.Fatalf("jitter(10s) = %s", d)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "120": 2 * time.Minute, "-1": 0, "soon": 0,
		now.Add(time.Minute).Format(http.TimeFormat):  time.Minute,
		now.Add(-time.Minute).Format(http.TimeFormat): 0,
	} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := parseRetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, func(n int, _ *http.Request, w http.ResponseWriter) int {
		if n == 0 {
			w.Header().Set("Retry-After", "1")
			return http.StatusTooManyRequests
		}
		return http.StatusOK
	})
	s, _ := e.service(testConfig())
	subscribe(t, s, "slow", rc.srv.URL, gateway.EventLeaderBegin)
	start := time.Now()
	e.campaign("slow", "a")
	eventually.True(t, 5*time.Second, "the retry", func() bool { return len(rc.successes()) == 1 })
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("retried after %s, before the receiver's Retry-After of 1s", d)
	}
}
