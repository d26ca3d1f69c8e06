package api

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/electorhq/elector/gateway"
)

// Defaults of Config.
const (
	DefaultKeepAlive = 15 * time.Second
	DefaultRetryHint = 2 * time.Second
)

// Config tunes the HTTP API. The zero value is ready to use.
type Config struct {
	// Logger receives one line per request and the errors the API did not
	// expect. Default slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes caps request bodies; a larger body is answered with 413.
	// Default DefaultMaxBodyBytes (64 KiB).
	MaxBodyBytes int64
	// KeepAlive is the interval of the comment lines that keep an idle SSE
	// stream open through proxies. Default DefaultKeepAlive (15s).
	KeepAlive time.Duration
	// RetryHint is the reconnection delay an SSE stream suggests to its
	// client in its `retry:` line. Default DefaultRetryHint (2s).
	RetryHint time.Duration
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
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
}

// New returns the HTTP handler of elector's API v1 over gw: the routes of
// openapi.yaml, a request id and one log line per request, and problem
// documents for every error, unknown routes and wrong methods included.
func New(gw *gateway.Gateway, cfg Config) http.Handler {
	cfg = cfg.withDefaults()
	a := &api{gw: gw, cfg: cfg, log: cfg.Logger}

	r := chi.NewRouter()
	r.Use(middleware.RequestID, a.logRequests, a.recoverPanics)
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		a.writeError(w, req, errorf("not-found", "there is no resource at %s; see /openapi.yaml for the API", clip(req.URL.Path)))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		allowed := allowedMethods(r, req.URL.Path)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		a.writeError(w, req, errorf("method-not-allowed", "%s is not allowed on %s; use %s", req.Method, clip(req.URL.Path), strings.Join(allowed, ", ")))
	})

	r.Get("/healthz", a.healthz)
	r.Get("/readyz", a.readyz)
	r.Get("/openapi.yaml", a.openapi)

	r.Route("/v1", func(r chi.Router) {
		r.Get("/events", a.streamAll)
		r.Get("/elections", a.listElections)
		r.Route("/elections/{election}", func(r chi.Router) {
			r.Get("/", a.getElection)
			r.Patch("/", a.patchElection)
			r.Get("/leader", a.getLeader)
			r.Get("/events", a.streamElection)
			r.Get("/candidates", a.listCandidates)
			r.Post("/candidates", a.campaign)
			r.Get("/candidates/{id}", a.getCandidate)
			r.Delete("/candidates/{id}", a.resign)
			r.Put("/candidates/{id}/heartbeat", a.heartbeat)
			r.Post("/candidates/{id}/error", a.reportError)
		})
	})
	return r
}

// allowedMethods lists the methods routes has for path, for the Allow
// header of a 405.
func allowedMethods(routes chi.Routes, path string) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if routes.Match(chi.NewRouteContext(), m, path) {
			out = append(out, m)
		}
	}
	return out
}
