package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/electorhq/elector/webhooks"
)

// webhookSeries are the series of webhook delivery; they implement
// webhooks.Metrics.
type webhookSeries struct {
	deliveries *prometheus.CounterVec
	attempts   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
}

var _ webhooks.Metrics = webhookSeries{}

func newWebhookSeries(reg prometheus.Registerer) webhookSeries {
	s := webhookSeries{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "webhook", Name: "deliveries_total",
			Help: "Webhook deliveries settled by this replica, by outcome (succeeded, failed).",
		}, []string{"outcome"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "webhook", Name: "attempts_total",
			Help: "Webhook delivery attempts, automatic and manual, by outcome (success, http_error, timeout, error).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "webhook", Name: "attempt_duration_seconds",
			Help:    "Time a webhook delivery attempt took, by outcome.",
			Buckets: prometheus.DefBuckets,
		}, []string{"outcome"}),
	}
	for _, o := range []webhooks.Status{webhooks.StatusSucceeded, webhooks.StatusFailed} {
		s.deliveries.WithLabelValues(string(o))
	}
	for _, o := range []string{webhooks.AttemptSuccess, webhooks.AttemptHTTPError, webhooks.AttemptTimeout, webhooks.AttemptError} {
		s.attempts.WithLabelValues(o)
	}
	reg.MustRegister(s.deliveries, s.attempts, s.duration)
	return s
}

// Webhooks returns the observer to set as webhooks.Config.Metrics.
func (m *Metrics) Webhooks() webhooks.Metrics { return m.hooks }

// Attempt implements webhooks.Metrics.
func (s webhookSeries) Attempt(outcome string, latency time.Duration) {
	s.attempts.WithLabelValues(outcome).Inc()
	s.duration.WithLabelValues(outcome).Observe(latency.Seconds())
}

// Delivered implements webhooks.Metrics.
func (s webhookSeries) Delivered(status webhooks.Status) {
	s.deliveries.WithLabelValues(string(status)).Inc()
}
