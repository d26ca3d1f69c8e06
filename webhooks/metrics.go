package webhooks

import "time"

// Outcomes of one delivery attempt, as Metrics.Attempt receives them.
const (
	AttemptSuccess   = "success"    // the receiver answered 2xx
	AttemptHTTPError = "http_error" // the receiver answered, not with a 2xx
	AttemptTimeout   = "timeout"    // no answer within the request timeout
	AttemptError     = "error"      // no answer: refused, unreachable, TLS, …
)

// Metrics observes webhook delivery for a metrics exporter (package metrics
// implements it); the default, NopMetrics, does nothing. Its methods are
// called from delivery workers and must be safe for concurrent use and
// fast.
type Metrics interface {
	// Attempt is called after each attempt, automatic or manual, with its
	// outcome (AttemptSuccess, …) and how long it took.
	Attempt(outcome string, latency time.Duration)
	// Delivered is called when an automatic delivery settles, with its
	// final status: StatusSucceeded or StatusFailed.
	Delivered(status Status)
}

// NopMetrics is a Metrics that does nothing.
type NopMetrics struct{}

// Attempt implements Metrics.
func (NopMetrics) Attempt(string, time.Duration) {}

// Delivered implements Metrics.
func (NopMetrics) Delivered(Status) {}

// attemptOutcome classifies an attempt for Metrics.Attempt.
func attemptOutcome(a Attempt, o outcome) string {
	switch {
	case o.ok:
		return AttemptSuccess
	case a.StatusCode != 0:
		return AttemptHTTPError
	case o.timeout:
		return AttemptTimeout
	}
	return AttemptError
}
