package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// userAgent identifies elector's deliveries.
const userAgent = "elector-webhooks/1"

// outcome is what one attempt learnt beyond its Attempt record.
type outcome struct {
	ok         bool          // a 2xx
	gone       bool          // 410 Gone: stop sending to this endpoint
	retryAfter time.Duration // the receiver's Retry-After, if any
	timeout    bool          // no answer within the attempt's timeout
}

// send makes one signed POST of payload to ep, bounded by timeout, and
// returns its record. Errors never quote the URL (it may carry a token in
// its query), only what went wrong.
func (s *Service) send(ctx context.Context, ep Endpoint, id string, payload []byte, timeout time.Duration) (Attempt, outcome) {
	start := s.now()
	a := Attempt{At: start.UTC()}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(payload))
	if err != nil {
		a.Error = "invalid endpoint URL"
		return a, outcome{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if err := SetHeaders(req.Header, ep.signing(start), id, start, payload); err != nil {
		a.Error = "no valid signing secret"
		return a, outcome{}
	}
	res, err := s.client.Do(req)
	a.Latency = s.now().Sub(start)
	if err != nil {
		a.Error = describe(err, timeout)
		return a, outcome{timeout: errors.Is(err, context.DeadlineExceeded)}
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	a.StatusCode = res.StatusCode
	o := outcome{ok: res.StatusCode >= 200 && res.StatusCode < 300, gone: res.StatusCode == http.StatusGone}
	switch {
	case o.ok:
	case res.StatusCode >= 300 && res.StatusCode < 400:
		a.Error = fmt.Sprintf("redirect (%d) not followed; register the final URL", res.StatusCode)
	case o.gone:
		a.Error = "410 Gone: the endpoint asked to stop deliveries"
	default:
		a.Error = fmt.Sprintf("status %d", res.StatusCode)
		if res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable {
			o.retryAfter = parseRetryAfter(res.Header, s.now())
		}
	}
	return a, o
}

// describe turns a client error into text for the delivery log, without
// the URL that *url.Error would quote.
func describe(err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no response within %s", timeout)
	case errors.Is(err, context.Canceled):
		return "cancelled: the replica is shutting down"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
