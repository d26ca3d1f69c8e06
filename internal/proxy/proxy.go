package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/electorhq/elector/client"
)

// The problem types the proxy answers with when it cannot forward. They
// are stable; the README's proxy section lists them.
const (
	problemProxyNoLeader      = client.ProblemTypePrefix + "proxy-no-leader"
	problemProxyLeaderUnknown = client.ProblemTypePrefix + "proxy-leader-unknown"
	problemProxyAddress       = client.ProblemTypePrefix + "proxy-leader-address-refused"
	problemProxyUnreachable   = client.ProblemTypePrefix + "proxy-leader-unreachable"
)

// Headers the proxy sets on every request it forwards, replacing any the
// client sent: the leader it meant to reach and its term, so the leader
// can refuse a request routed by a view older than its own.
const (
	HeaderLeader = "Elector-Leader"
	HeaderTerm   = "Elector-Term"
)

// DefaultMetadataKey is the key of a candidate's metadata that holds its
// address.
const DefaultMetadataKey = "addr"

// proxyRetryAfter is the Retry-After of a 503: a handover takes a round
// trip, or a TTL when the leader expires.
const proxyRetryAfter = "1"

// route is where the proxy sends requests: the leader as last heard.
type route struct {
	leader string    // "" for no leader
	term   uint64    // the leadership's term (the last one's with no leader)
	target *url.URL  // nil when the leader registered no usable address
	why    string    // why target is nil
	heard  time.Time // when the proxy heard of this leadership
	// ctx ends when the proxy hears that this leadership is over: it cuts
	// the websockets and event streams forwarded under it.
	ctx context.Context
}

// Proxy forwards each request to the current leader of an election,
// at the address the leader registered in its metadata under key. It
// learns who leads from the election's event stream (follow); until it has
// heard, while nobody leads, and when its stream has been down for longer
// than staleAfter, it answers 503 with Retry-After and a problem.
//
// A request goes to the leader the proxy knew when the request came in and
// finishes there, also across a handover; websockets and event streams
// (Accept: text/event-stream) are cut when the proxy hears the leadership
// is over, so their clients reconnect and reach the new leader. The proxy
// routes; it does not fence: a request in flight at a handover reaches the
// old leader, so the leader checks the Elector-Term it is given against
// its own term (ELECTOR_TERM) before acting on a write. The proxy makes no
// leader: who leads is decided by the gateway alone, and each leader still
// stops acting by the step-down rule.
type Proxy struct {
	election   string
	key        string
	staleAfter time.Duration
	log        *slog.Logger
	now        func() time.Time
	rp         *httputil.ReverseProxy
	transport  *http.Transport

	// base ends when the proxy closes; every route's ctx derives from it.
	base   context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	cur       route
	endCur    context.CancelFunc
	heard     bool      // a leader (or none) has been heard
	downSince time.Time // the event stream is down since then; zero while up
}

// Config configures a Proxy.
type Config struct {
	// Election is the election whose leader requests go to.
	Election string
	// Key is the key of the leader's metadata holding the address to
	// forward to; DefaultMetadataKey when empty.
	Key string
	// StaleAfter is how long the proxy goes on forwarding to the leader it
	// last heard of while its event stream is down; set it to the
	// candidates' TTL, after which that leader has stepped down if it
	// could not reach the gateway either. It must be positive.
	StaleAfter time.Duration
	// Logger receives the proxy's logs; slog.Default() when nil.
	Logger *slog.Logger
}

// New returns a proxy of the election c names. It forwards nothing until
// Serve (or a caller of its own) makes it follow the election.
func New(c Config) *Proxy {
	if c.Key == "" {
		c.Key = DefaultMetadataKey
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	p := &Proxy{election: c.Election, key: c.Key, staleAfter: c.StaleAfter, log: c.Logger, now: time.Now}
	p.base, p.cancel = context.WithCancel(context.Background())
	p.transport = &http.Transport{
		Proxy:                 nil, // the leader's address, never an environment's proxy
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:       p.rewrite,
		Transport:     p.transport,
		FlushInterval: -1, // streams pass through as they come
		ErrorHandler:  p.upstreamError,
		ErrorLog:      slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	return p
}

// routeKey carries a request's route from ServeHTTP to rewrite.
type routeKey struct{}

// ServeHTTP forwards r to the leader, or answers why it cannot.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, unknown := p.route()
	switch {
	case unknown != "":
		proxyProblem(w, r, http.StatusServiceUnavailable, problemProxyLeaderUnknown, "Leader unknown", unknown, nil)
		return
	case rt.leader == "":
		proxyProblem(w, r, http.StatusServiceUnavailable, problemProxyNoLeader, "No leader",
			fmt.Sprintf("election %q has no leader", p.election), map[string]any{"term": rt.term})
		return
	case rt.target == nil:
		proxyProblem(w, r, http.StatusBadGateway, problemProxyAddress, "Leader address refused",
			fmt.Sprintf("leader %q (term %d) of election %q cannot be forwarded to: %s", rt.leader, rt.term, p.election, rt.why),
			map[string]any{"leader": rt.leader, "term": rt.term})
		return
	}
	ctx := r.Context()
	if longLived(r) {
		c, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(rt.ctx, cancel)
		defer stop()
		ctx = c
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(ctx, routeKey{}, rt)))
}

// longLived reports whether r opens a websocket (or another upgrade) or an
// event stream: those are cut when the leadership they reach is over.
func longLived(r *http.Request) bool {
	if r.Header.Get("Upgrade") != "" {
		return true
	}
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(strings.ToLower(v), "text/event-stream") {
			return true
		}
	}
	return false
}

// rewrite points the outbound request at its route's target.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	rt := pr.In.Context().Value(routeKey{}).(route)
	pr.SetURL(rt.target)
	pr.SetXForwarded()
	pr.Out.Header.Set(HeaderLeader, rt.leader)
	pr.Out.Header.Set(HeaderTerm, strconv.FormatUint(rt.term, 10))
}

// upstreamError answers a request the leader did not answer.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	rt, _ := r.Context().Value(routeKey{}).(route)
	if r.Context().Err() != nil {
		// The client went away, the leadership ended under a stream, or
		// the proxy is closing: nobody reads an answer.
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	p.log.LogAttrs(r.Context(), slog.LevelWarn, "the leader did not answer a forwarded request",
		slog.String("leader", rt.leader), slog.Uint64("term", rt.term), slog.Any("err", err))
	proxyProblem(w, r, http.StatusBadGateway, problemProxyUnreachable, "Leader unreachable",
		fmt.Sprintf("forwarding to leader %q (term %d) of election %q failed: %v", rt.leader, rt.term, p.election, err),
		map[string]any{"leader": rt.leader, "term": rt.term})
}

// proxyProblem answers with an RFC 9457 problem; a 503 says when to retry.
func proxyProblem(w http.ResponseWriter, r *http.Request, status int, typ, title, detail string, ext map[string]any) {
	body := map[string]any{"type": typ, "title": title, "status": status, "detail": detail, "instance": r.URL.Path}
	for k, v := range ext {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", proxyRetryAfter)
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// route is the current route, or why it is unknown: nothing heard yet,
// or an event stream down for longer than staleAfter.
func (p *Proxy) route() (rt route, unknown string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.heard:
		return p.cur, fmt.Sprintf("the proxy has not heard who leads election %q yet", p.election)
	case !p.downSince.IsZero() && p.now().Sub(p.downSince) > p.staleAfter:
		return p.cur, fmt.Sprintf("the proxy lost the event stream of election %q %s ago and no longer knows who leads",
			p.election, p.now().Sub(p.downSince).Round(time.Second))
	}
	return p.cur, ""
}

// setLeader makes l the route. A new leadership (another leader, term or
// none) ends the route before it, cutting its long-lived requests.
func (p *Proxy) setLeader(l client.Leader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.heard && l.ID == p.cur.leader && l.Term == p.cur.term {
		return
	}
	p.heard = true
	if p.endCur != nil {
		p.endCur()
	}
	rt := route{leader: l.ID, term: l.Term, heard: p.now()}
	rt.ctx, p.endCur = context.WithCancel(p.base)
	p.cur = rt
	if l.ID == "" {
		p.log.LogAttrs(p.base, slog.LevelInfo, "proxy: no leader; answering 503", slog.Uint64("term", l.Term))
		return
	}
	switch target, err := LeaderTarget(l.Metadata, p.key); {
	case err != nil:
		rt.why = err.Error()
		p.log.LogAttrs(p.base, slog.LevelWarn, "proxy: the leader registered no address to forward to; answering 502",
			slog.String("leader", l.ID), slog.Uint64("term", l.Term), slog.String("why", rt.why))
	default:
		rt.target = target
		p.log.LogAttrs(p.base, slog.LevelInfo, "proxy: forwarding to the leader",
			slog.String("leader", l.ID), slog.Uint64("term", l.Term), slog.String("target", target.String()))
	}
	p.cur = rt
}

// streamUp records that the event stream is connected.
func (p *Proxy) streamUp() {
	p.mu.Lock()
	p.downSince = time.Time{}
	p.mu.Unlock()
}

// streamDown records that the event stream is down, from now if it was up.
func (p *Proxy) streamDown() {
	p.mu.Lock()
	if p.downSince.IsZero() {
		p.downSince = p.now()
	}
	p.mu.Unlock()
}

// close cuts what is still forwarded and drops idle connections to
// leaders.
func (p *Proxy) close() {
	p.cancel()
	p.transport.CloseIdleConnections()
}
