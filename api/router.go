package api

import (
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/webhooks"
)

// Defaults of Config.
const (
	DefaultKeepAlive = 15 * time.Second
	DefaultRetryHint = 2 * time.Second
)

// Defaults that elector serve applies (the zero Config has no limits). A
// candidate heartbeats every TTL/3, at most 3 times a second at the
// shortest TTL (1s): 50 a second per candidate refuses only a client in a
// loop, however many candidates share an address, and never a load that
// cycles through its candidates as fast as the replica answers (3,000
// candidates at 30,000 heartbeats a second are 10 a second each).
const (
	DefaultHeartbeatRate  = 50
	DefaultHeartbeatBurst = 100
	DefaultMaxReads       = 1024
)

// Config tunes the HTTP API. The zero value is ready to use: a zero field
// takes its default or leaves a limit off, as its comment says; Validate
// (config.go) refuses what cannot work.
type Config struct {
	// Logger receives the errors the API did not expect, answers with a
	// 5xx status and, with LogRequests, one line per request. Default
	// slog.Default().
	Logger *slog.Logger
	// LogRequests writes one line per request at INFO once it is answered
	// (method, route, status, bytes, duration, request id): an access
	// log. Default false: most requests are heartbeats, and operators
	// follow the transitions the gateway logs instead. Answers with a 5xx
	// status are logged whatever it says.
	LogRequests bool
	// MaxBodyBytes caps request bodies; a larger body is answered with 413.
	// At least MinBodyBytes. Default DefaultMaxBodyBytes (64 KiB).
	MaxBodyBytes int64
	// BodyTimeout bounds the time a request body may take to arrive once
	// its headers are in; a slower body is answered with 408
	// request-timeout. At least MinBodyTimeout. Default DefaultBodyTimeout
	// (10s).
	BodyTimeout time.Duration
	// KeepAlive is the interval of the comment lines that keep an idle SSE
	// stream open through proxies. At least MinKeepAlive. Default
	// DefaultKeepAlive (15s).
	KeepAlive time.Duration
	// RetryHint is the reconnection delay an SSE stream suggests to its
	// client in its `retry:` line. At least MinRetryHint. Default
	// DefaultRetryHint (2s).
	RetryHint time.Duration
	// Webhooks, if set, serves webhook subscriptions, delivery logs and
	// candidates' own webhooks; without it those answer 501
	// webhooks-unavailable.
	Webhooks *webhooks.Service
	// Metrics, if set, serves GET /metrics and observes requests and event
	// streams (package metrics); without it /metrics answers not-found.
	Metrics Metrics

	// Tokens are the API tokens; with none (the default) the API needs no
	// authentication. See auth.go for the scope each route needs.
	Tokens []Token
	// ProtectOperational puts /metrics, /docs and /openapi.* behind the
	// read scope; the probes stay open. Default false.
	ProtectOperational bool
	// WriteRate and WriteBurst are the per-client token bucket of write
	// requests (every method but GET and HEAD) other than heartbeats, of
	// candidates and of sessions; 0 disables it, and a zero burst is the
	// rate rounded up. Default 0: behind a load balancer every client
	// shares one address, and a fleet's writes would be refused as a
	// crowd.
	WriteRate  float64
	WriteBurst int
	// HeartbeatRate and HeartbeatBurst are the token bucket of each
	// candidate's heartbeats, and of each session's (keyed by election,
	// candidate or session, and token, not by address); 0 disables it. Default 0; elector serve sets
	// DefaultHeartbeatRate and DefaultHeartbeatBurst.
	HeartbeatRate  float64
	HeartbeatBurst int
	// ReadRate and ReadBurst are the per-client token bucket of reads (GET
	// of /v1/ routes but event streams); 0 disables it. Default 0.
	ReadRate  float64
	ReadBurst int
	// MaxReads caps the reads (as ReadRate counts them) served at once on
	// this replica; 0: no cap. Default 0; elector serve sets
	// DefaultMaxReads.
	MaxReads int
	// TrustedProxies are the addresses whose X-Forwarded-For names the
	// client for the rate limit. Default none: the remote address counts.
	TrustedProxies []netip.Prefix
	// MaxStreams caps the event streams open at once; 0: no cap.
	MaxStreams int
	// CheckOutbox makes readiness require Webhooks.Run to be running (serve
	// runs it; tests that do not leave it false). Default false.
	CheckOutbox bool
	// Shutdown, when closed, ends event streams with a retry hint, so that
	// their clients reconnect (to another replica). Default nil: never.
	Shutdown <-chan struct{}
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.RetryHint <= 0 {
		c.RetryHint = DefaultRetryHint
	}
	return c
}

// api holds what the handlers share.
type api struct {
	gw  *gateway.Gateway
	cfg Config
	log *slog.Logger

	writes     *bucketLimiter[netip.Addr]   // nil: no write rate limit
	reads      *bucketLimiter[netip.Addr]   // nil: no read rate limit
	heartbeats *bucketLimiter[heartbeatKey] // nil: no heartbeat limit
	streams    atomic.Int64                 // event streams open
	readsNow   atomic.Int64                 // reads being served
}

// New returns the HTTP handler of elector's API v1 over gw: the routes of
// openapi.yaml, a request id and, with Config.LogRequests, one log line per
// request, and problem
// documents for every error, unknown routes and wrong methods included.
func New(gw *gateway.Gateway, cfg Config) http.Handler {
	cfg = cfg.withDefaults()
	a := &api{gw: gw, cfg: cfg, log: cfg.Logger,
		writes:     newBucketLimiter[netip.Addr](cfg.WriteRate, cfg.WriteBurst),
		reads:      newBucketLimiter[netip.Addr](cfg.ReadRate, cfg.ReadBurst),
		heartbeats: newBucketLimiter[heartbeatKey](cfg.HeartbeatRate, cfg.HeartbeatBurst),
	}

	r := chi.NewRouter()
	r.Use(a.limitBodyTime, newRequestIDs().middleware, a.logRequests, a.observeRequests, a.recoverPanics)
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		a.writeError(w, req, errorf("not-found", "there is no resource at %s; see /openapi.yaml for the API", clip(req.URL.Path)))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		allowed := allowedMethods(a.routes(), req.URL.Path)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		a.writeError(w, req, errorf("method-not-allowed", "%s is not allowed on %s; use %s", req.Method, clip(req.URL.Path), strings.Join(allowed, ", ")))
	})

	for _, rt := range a.routes() {
		r.Method(rt.method, rt.pattern, a.guard(rt))
	}
	return r
}

// route is one operation of the API: everything the router, the
// authentication and the limits need to know of it.
type route struct {
	method, pattern string
	// scope is what an API token needs to call the route (auth.go); the
	// pseudo-scopes scopeOperational and scopeAdminOrLeader resolve per
	// request (scopeOf).
	scope Scope
	// stream marks an event stream: capped by Config.MaxStreams
	// (streamlimit.go) and exempt from the read limits, being one long read.
	stream  bool
	handler http.HandlerFunc
}

// routes is the API's routing table, as openapi.yaml describes it, with
// the scope each route needs and whether it is an event stream. A test
// compares it with openapi.yaml both ways; another walks it with tokens of
// every scope.
func (a *api) routes() []route {
	return []route{
		{"GET", "/healthz", scopeOpen, false, a.healthz},
		{"GET", "/readyz", scopeOpen, false, a.readyz},
		{"GET", "/metrics", scopeOperational, false, a.metrics},
		{"GET", "/openapi.yaml", scopeOperational, false, a.openapi},
		{"GET", "/openapi.json", scopeOperational, false, a.openapiAsJSON},
		{"GET", "/", scopeOpen, false, a.root},
		{"HEAD", "/", scopeOpen, false, a.root},
		{"GET", "/docs", scopeOperational, false, a.docs},
		{"HEAD", "/docs", scopeOperational, false, a.docs},
		{"GET", "/docs/{asset}", scopeOperational, false, a.docsAsset},
		{"GET", "/ui", scopeOpen, false, a.uiPage}, // the page holds no data: see uiPage
		{"GET", "/ui/{asset}", scopeOpen, false, a.uiAsset},
		{"GET", "/v1/events", ScopeRead, true, a.streamAll},
		{"GET", "/v1/elections", ScopeRead, false, a.listElections},
		{"GET", "/v1/elections/{election}", ScopeRead, false, a.getElection},
		{"PATCH", "/v1/elections/{election}", ScopeAdmin, false, a.patchElection},
		{"DELETE", "/v1/elections/{election}", ScopeAdmin, false, a.deleteElection},
		{"GET", "/v1/elections/{election}/leader", ScopeRead, false, a.getLeader},
		{"GET", "/v1/elections/{election}/events", ScopeRead, true, a.streamElection},
		{"GET", "/v1/elections/{election}/candidates", ScopeRead, false, a.listCandidates},
		{"POST", "/v1/elections/{election}/candidates", ScopeCampaign, false, a.campaign},
		{"GET", "/v1/elections/{election}/candidates/{id}", ScopeRead, false, a.getCandidate},
		{"DELETE", "/v1/elections/{election}/candidates/{id}", ScopeCampaign, false, a.resign},
		{"PUT", "/v1/elections/{election}/candidates/{id}/heartbeat", ScopeCampaign, false, a.heartbeat},
		{"POST", "/v1/elections/{election}/candidates/{id}/error", ScopeCampaign, false, a.reportError},
		{"POST", "/v1/elections/{election}/candidates/{id}/handover", ScopeCampaign, false, a.handover},
		{"POST", "/v1/elections/{election}/transfer", scopeAdminOrLeader, false, a.transfer},
		{"DELETE", "/v1/elections/{election}/transfer", scopeAdminOrLeader, false, a.cancelTransfer},
		{"POST", "/v1/sessions", ScopeCampaign, false, a.openSession},
		{"PUT", "/v1/sessions/{session}/heartbeat", ScopeCampaign, false, a.keepSession},
		{"DELETE", "/v1/sessions/{session}", ScopeCampaign, false, a.closeSession},
		{"GET", "/v1/elections/{election}/candidates/{id}/deliveries", ScopeRead, false, a.candidateDeliveries},
		{"POST", "/v1/elections/{election}/candidates/{id}/deliveries/{delivery}/redeliver", ScopeAdmin, false, a.redeliverCandidate},
		{"GET", "/v1/elections/{election}/subscriptions", ScopeAdmin, false, a.listSubscriptions},
		{"POST", "/v1/elections/{election}/subscriptions", ScopeAdmin, false, a.createSubscription},
		{"GET", "/v1/elections/{election}/subscriptions/{sub}", ScopeAdmin, false, a.getSubscription},
		{"DELETE", "/v1/elections/{election}/subscriptions/{sub}", ScopeAdmin, false, a.deleteSubscription},
		{"POST", "/v1/elections/{election}/subscriptions/{sub}/rotate-secret", ScopeAdmin, false, a.rotateSecret},
		{"GET", "/v1/elections/{election}/subscriptions/{sub}/deliveries", ScopeAdmin, false, a.listDeliveries},
		{"GET", "/v1/elections/{election}/subscriptions/{sub}/deliveries/{delivery}", ScopeAdmin, false, a.getDelivery},
		{"POST", "/v1/elections/{election}/subscriptions/{sub}/deliveries/{delivery}/redeliver", ScopeAdmin, false, a.redeliver},
	}
}

// allowedMethods lists the methods of the routes whose pattern matches
// path, for the Allow header of a 405. (chi's own Match reports a match for
// any method once a path matches, so it cannot answer this.)
func allowedMethods(routes []route, path string) []string {
	var out []string
	for _, rt := range routes {
		if patternMatches(rt.pattern, path) && !slices.Contains(out, rt.method) {
			out = append(out, rt.method)
		}
	}
	return out
}

// patternMatches matches a chi pattern of literal and {param} segments.
func patternMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if strings.HasPrefix(p, "{") {
			if xs[i] == "" {
				return false
			}
		} else if p != xs[i] {
			return false
		}
	}
	return true
}
