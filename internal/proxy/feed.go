package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/ctxwait"
)

// streamIdleTimeout closes an event stream on which nothing, not even the
// gateway's keep-alive comment (every 15s by default), arrived for this
// long: a gateway that froze with the stream open is noticed, and the
// stream reconnects, to the next gateway if there are several.
const streamIdleTimeout = 45 * time.Second

// follow keeps the proxy's route up to date from the election's event
// stream (client.Observe: the current leader, then every change, each
// leader.begin carrying the leader's metadata) until ctx ends. No request
// polls: the stream says who leads within a round trip of each change.
//
// With several gateways, a stream whose reconnection fails moves to the
// next; after a whole round of failed connections it backs off. It
// returns nil when ctx ends, or the error of a gateway that refuses the
// stream for good at the first connection (a 4xx: a bad election name, a
// missing or wrong API token): that will not change by itself.
func (p *Proxy) follow(ctx context.Context, gateways []string, opts []client.Option) error {
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second, // the gateway answers a stream at once
	}
	defer tr.CloseIdleConnections()
	failures, warned := 0, false
	for i := 0; ; i = (i + 1) % len(gateways) {
		sctx, cancel := context.WithCancel(ctx)
		moveOn := func() {}
		if len(gateways) > 1 {
			moveOn = cancel
		}
		hc := &http.Client{Transport: &streamTracker{next: tr, up: p.streamUp, down: p.streamDown, failed: moveOn}}
		cl := client.New(gateways[i], append(opts, client.WithHTTPClient(hc))...)
		leaders, err := cl.Observe(sctx, p.election)
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				return nil
			}
			if refusedForGood(err) {
				return err
			}
			failures++
			if !warned {
				warned = true
				p.log.LogAttrs(ctx, slog.LevelWarn, "proxy: cannot follow the election's events; retrying",
					slog.String("gateway", cl.BaseURL()), slog.Any("err", err))
			}
			if failures%len(gateways) == 0 && !ctxwait.Sleep(ctx, retryWait(failures/len(gateways))) {
				return nil
			}
			continue
		}
		if warned {
			p.log.LogAttrs(ctx, slog.LevelInfo, "proxy: following the election's events again", slog.String("gateway", cl.BaseURL()))
			warned = false
		}
		failures = 0
		for l := range leaders {
			p.setLeader(l)
		}
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		p.log.LogAttrs(ctx, slog.LevelWarn, "proxy: lost the election's events; moving to the next gateway", slog.String("gateway", cl.BaseURL()))
	}
}

// refusedForGood reports whether a gateway refused the event stream with a
// 4xx other than 429.
func refusedForGood(err error) bool {
	var pr *client.Problem
	return errors.As(err, &pr) && pr.Status >= 400 && pr.Status < 500 && pr.Status != http.StatusTooManyRequests
}

// retryWait is the back-off after round failed rounds of connections:
// 1s doubling up to 30s.
func retryWait(round int) time.Duration {
	d := time.Second
	for i := 1; i < round && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// streamTracker is the transport of the proxy's event stream: it tells the
// proxy when the stream connects (up) and when a connected stream ends
// (down), calls failed when a connection attempt fails, and closes a
// stream silent for streamIdleTimeout.
type streamTracker struct {
	next             http.RoundTripper
	up, down, failed func()
}

func (t *streamTracker) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.failed()
		return res, err
	}
	t.up()
	b := &trackedBody{ReadCloser: res.Body, down: t.down}
	b.idle = time.AfterFunc(streamIdleTimeout, func() { _ = res.Body.Close() })
	res.Body = b
	return res, nil
}

// trackedBody is a stream's body that reports its end once and closes
// itself when idle.
type trackedBody struct {
	io.ReadCloser
	down func()
	idle *time.Timer
	once sync.Once
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.idle.Reset(streamIdleTimeout)
	}
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *trackedBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

func (b *trackedBody) end() {
	b.once.Do(func() {
		b.idle.Stop()
		b.down()
	})
}
