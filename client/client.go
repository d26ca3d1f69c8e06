package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of a Client.
const (
	DefaultUserAgent      = "elector-client-go"
	DefaultReconnectDelay = 2 * time.Second
	// MaxReconnectDelay caps the back-off of Watch between failed
	// reconnection attempts.
	MaxReconnectDelay = 30 * time.Second
	// DefaultWatchIdleTimeout is how long a Watch's connection may stay
	// silent before it is taken for dead and reopened. The gateway sends
	// a comment every 15 s (sse.keep_alive) on a stream with no events.
	DefaultWatchIdleTimeout = 60 * time.Second
)

// TokenHeader carries a candidate's token on heartbeat, resign and error
// report.
const TokenHeader = "Elector-Candidate-Token"

// SessionTokenHeader carries a session's token on the session's own calls
// (HeartbeatSession, CloseSession) and on a campaign in the session.
const SessionTokenHeader = "Elector-Session-Token"

// Client talks to one elector gateway (or a load balancer in front of
// several replicas). It is safe for concurrent use.
type Client struct {
	base           *url.URL
	hc             *http.Client
	userAgent      string
	apiToken       string
	reconnectDelay time.Duration
	idleTimeout    time.Duration
	log            *slog.Logger
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the http.Client requests go through. Default: a
// client with no overall timeout (event streams are long-lived); pass
// contexts with deadlines to bound single calls.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithUserAgent sets the User-Agent header. Default DefaultUserAgent.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithAPIToken sends token as "Authorization: Bearer <token>" on every
// request, for gateways that require API authentication.
func WithAPIToken(token string) Option { return func(c *Client) { c.apiToken = token } }

// WithReconnectDelay sets how long Watch waits before reconnecting until
// the stream's own `retry:` hint says otherwise. Default
// DefaultReconnectDelay.
func WithReconnectDelay(d time.Duration) Option {
	return func(c *Client) { c.reconnectDelay = d }
}

// WithWatchIdleTimeout sets how long a Watch's connection may go without a
// byte (an event or the gateway's keep-alive comment) before Watch takes
// it for dead, as a connection whose peer vanished without closing it
// (a stopped replica, a dropped NAT entry) is, closes it and reconnects,
// resuming after the last event. Keep it well above the gateway's
// sse.keep_alive (15 s by default). Zero or less: never. Default
// DefaultWatchIdleTimeout.
func WithWatchIdleTimeout(d time.Duration) Option {
	return func(c *Client) { c.idleTimeout = d }
}

// WithLogger receives Watch's reconnections. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.log = l } }

// New returns a client of the gateway at baseURL, such as
// "http://127.0.0.1:8080". A baseURL that does not parse makes every call
// fail with an error saying so.
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		hc:             &http.Client{},
		userAgent:      DefaultUserAgent,
		reconnectDelay: DefaultReconnectDelay,
		idleTimeout:    DefaultWatchIdleTimeout,
		log:            slog.New(discard{}),
	}
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		c.base = u
	}
	for _, o := range opts {
		o(c)
	}
	if c.reconnectDelay <= 0 {
		c.reconnectDelay = DefaultReconnectDelay
	}
	return c
}

// BaseURL returns the gateway's address as New was given it, or "" when
// it did not parse.
func (c *Client) BaseURL() string {
	if c.base == nil {
		return ""
	}
	return c.base.String()
}

// endpoint joins path segments, escaping each, onto the base URL.
func (c *Client) endpoint(segments ...string) (string, error) {
	if c.base == nil {
		return "", fmt.Errorf("elector: the gateway URL must be an absolute http(s) URL such as http://127.0.0.1:8080")
	}
	var b strings.Builder
	b.WriteString(c.base.String())
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String(), nil
}

// newRequest builds a request with the client's headers.
func (c *Client) newRequest(ctx context.Context, method, target string, body any, token string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("elector: encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.apiToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiToken)
	}
	if token != "" {
		req.Header.Set(TokenHeader, token)
	}
	return req, nil
}

// do sends one request and decodes a 2xx JSON answer into out (if not
// nil). Any other status becomes a *Problem.
func (c *Client) do(ctx context.Context, method string, body any, token string, out any, segments ...string) error {
	return c.doQuery(ctx, method, nil, body, token, out, segments...)
}

// doQuery is do with a query string.
func (c *Client) doQuery(ctx context.Context, method string, query url.Values, body any, token string, out any, segments ...string) error {
	return c.send(ctx, method, query, body, TokenHeader, token, out, segments...)
}

// doSession is do with a session's token, which goes in
// SessionTokenHeader where do sends a candidate's in TokenHeader.
func (c *Client) doSession(ctx context.Context, method string, body any, token string, out any, segments ...string) error {
	return c.send(ctx, method, nil, body, SessionTokenHeader, token, out, segments...)
}

// send makes one request, with token (unless "") in header, and decodes a
// 2xx JSON answer into out (if not nil). Any other status becomes a
// *Problem.
func (c *Client) send(ctx context.Context, method string, query url.Values, body any, header, token string, out any, segments ...string) error {
	target, err := c.endpoint(segments...)
	if err != nil {
		return err
	}
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := c.newRequest(ctx, method, target, body, "")
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set(header, token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readProblem(resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("elector: decode answer of %s %s: %w", method, req.URL.Path, err)
	}
	return nil
}

// discard is a slog.Handler that drops every record: slog.DiscardHandler,
// which needs Go 1.24, for the Go versions this module supports.
type discard struct{}

func (discard) Enabled(context.Context, slog.Level) bool  { return false }
func (discard) Handle(context.Context, slog.Record) error { return nil }
func (d discard) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discard) WithGroup(string) slog.Handler           { return d }
