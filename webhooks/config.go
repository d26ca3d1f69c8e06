package webhooks

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/electorhq/elector/internal/fielderr"
)

// Defaults of Config.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultBeginTimeout   = 10 * time.Second
	DefaultClaimTTL       = 20 * time.Second
	DefaultPollInterval   = 2 * time.Second
	DefaultSecretOverlap  = 24 * time.Hour
	DefaultMaxRetryAfter  = time.Hour
	DefaultKeepDeliveries = 500
	// MaxURLBytes bounds an endpoint URL.
	MaxURLBytes = 2048
)

// Bounds Config.Validate applies.
const (
	MinRequestTimeout = time.Second
	MaxRequestTimeout = 5 * time.Minute
	// MaxRetries bounds the length of RetrySchedule.
	MaxRetries   = 20
	MinRetryWait = 100 * time.Millisecond
	MaxRetryWait = 24 * time.Hour
	MinClaimTTL  = time.Second
)

// Config tunes a Service. The zero value is ready to use: a zero field
// takes its default, and Validate refuses a negative one.
type Config struct {
	// Replica names this replica in claims. Default: a random id.
	Replica string
	// AllowPrivateNetworks lets webhooks reach loopback, private,
	// link-local and CGNAT addresses. Default false; local development and
	// tests set it.
	AllowPrivateNetworks bool
	// RequestTimeout bounds one delivery attempt, within
	// [MinRequestTimeout, MaxRequestTimeout]. Default 10s.
	RequestTimeout time.Duration
	// RetrySchedule is the wait before each retry (jittered ±20%); after
	// the last, the delivery fails. At most MaxRetries waits, each within
	// [MinRetryWait, MaxRetryWait]. Default (nil) DefaultRetrySchedule();
	// empty: no retry.
	RetrySchedule []time.Duration
	// MaxRetryAfter caps a receiver's Retry-After. Default 1h.
	MaxRetryAfter time.Duration
	// BeginTimeout is how long a candidate's own leader.begin may go
	// unacknowledged before the candidate is put in error: from the event,
	// or, if no attempt was recorded yet, from the first attempt when that
	// is later. Within [MinBeginTimeout, MaxBeginTimeout]. Default 10s; a
	// candidate may ask for its own.
	BeginTimeout time.Duration
	// ClaimTTL is how long a replica's claim on an endpoint lasts unless
	// renewed (every ClaimTTL/3); a dead replica's endpoints wait this long
	// for another replica. An attempt starts only while the claim outlasts
	// it, so ClaimTTL must be at least twice RequestTimeout (then a claim
	// renewed on time always does), and at least MinClaimTTL. Default
	// DefaultClaimTTL, or twice RequestTimeout if that is longer.
	ClaimTTL time.Duration
	// PollInterval is how often Run looks for endpoints to claim.
	// Default 2s.
	PollInterval time.Duration
	// SecretOverlap is how long a rotated-out secret keeps signing.
	// Default 24h.
	SecretOverlap time.Duration
	// KeepDeliveries is how many delivery records an endpoint keeps.
	// Default 500.
	KeepDeliveries int
	// Logger receives the Service's logs; never a secret or a URL's query.
	// Default slog.Default().
	Logger *slog.Logger
	// Resolver resolves endpoint hosts when they are registered. Default
	// net.DefaultResolver.
	Resolver Resolver
	// Jitter spreads retry waits. Default ±20% at random; tests pass the
	// identity.
	Jitter func(time.Duration) time.Duration
	// Metrics observes attempts and deliveries. Default NopMetrics{}.
	Metrics Metrics
}

func (c Config) withDefaults() Config {
	if c.Replica == "" {
		c.Replica = newID("r-")
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RetrySchedule == nil {
		c.RetrySchedule = DefaultRetrySchedule()
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.BeginTimeout <= 0 {
		c.BeginTimeout = DefaultBeginTimeout
	}
	if c.ClaimTTL <= 0 {
		c.ClaimTTL = max(DefaultClaimTTL, 2*c.RequestTimeout)
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.SecretOverlap <= 0 {
		c.SecretOverlap = DefaultSecretOverlap
	}
	if c.KeepDeliveries <= 0 {
		c.KeepDeliveries = DefaultKeepDeliveries
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.Jitter == nil {
		c.Jitter = jitter
	}
	if c.Metrics == nil {
		c.Metrics = NopMetrics{}
	}
	return c
}

// Validate reports the first field of c that cannot work, as a
// *fielderr.Error.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("webhooks: %w", fielderr.Errorf(field, format, args...))
	}
	for _, f := range []struct {
		field string
		d     time.Duration
	}{
		{"RequestTimeout", c.RequestTimeout}, {"MaxRetryAfter", c.MaxRetryAfter}, {"BeginTimeout", c.BeginTimeout},
		{"ClaimTTL", c.ClaimTTL}, {"PollInterval", c.PollInterval}, {"SecretOverlap", c.SecretOverlap},
	} {
		if f.d < 0 {
			return bad(f.field, "%s is negative; 0 takes the default", f.d)
		}
	}
	if c.KeepDeliveries < 0 {
		return bad("KeepDeliveries", "%d is negative; 0 takes the default", c.KeepDeliveries)
	}
	c = c.withDefaults()
	switch {
	case c.RequestTimeout < MinRequestTimeout || c.RequestTimeout > MaxRequestTimeout:
		return bad("RequestTimeout", "%s is outside [%s, %s]", c.RequestTimeout, MinRequestTimeout, MaxRequestTimeout)
	case c.BeginTimeout < MinBeginTimeout || c.BeginTimeout > MaxBeginTimeout:
		return bad("BeginTimeout", "%s is outside [%s, %s]", c.BeginTimeout, MinBeginTimeout, MaxBeginTimeout)
	case len(c.RetrySchedule) > MaxRetries:
		return bad("RetrySchedule", "%d retries; at most %d", len(c.RetrySchedule), MaxRetries)
	case c.ClaimTTL < MinClaimTTL:
		return bad("ClaimTTL", "%s is below %s", c.ClaimTTL, MinClaimTTL)
	case c.ClaimTTL < 2*c.RequestTimeout:
		return bad("ClaimTTL", "%s must be at least 2× {RequestTimeout} (%s): an attempt could outlast the claim",
			c.ClaimTTL, c.RequestTimeout)
	}
	for i, d := range c.RetrySchedule {
		if d < MinRetryWait || d > MaxRetryWait {
			return bad("RetrySchedule", "wait %d, %s, is outside [%s, %s]", i+1, d, MinRetryWait, MaxRetryWait)
		}
	}
	return nil
}
