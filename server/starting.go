package server

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
)

// phasedHandler serves HTTP from the moment serve listens: while the
// backend opens (an embedded cluster member waits for its peers) probes
// answer, /healthz 200 and /readyz 503 saying why, and every other request
// gets a 503 backend-unavailable problem with Retry-After; once Ready is
// called it hands every request to the API. Safe for concurrent use.
type phasedHandler struct {
	api    atomic.Pointer[http.Handler]
	reason atomic.Pointer[string]
}

// newPhasedHandler returns a handler in its starting phase, reporting
// reason until Waiting or Ready is called.
func newPhasedHandler(reason string) *phasedHandler {
	h := &phasedHandler{}
	h.reason.Store(&reason)
	return h
}

// Waiting sets why the backend is not open yet, as /readyz reports it.
func (h *phasedHandler) Waiting(reason string) { h.reason.Store(&reason) }

// Ready hands every later request to api.
func (h *phasedHandler) Ready(api http.Handler) { h.api.Store(&api) }

func (h *phasedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if api := h.api.Load(); api != nil {
		(*api).ServeHTTP(w, r)
		return
	}
	reason := *h.reason.Load()
	if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
		return
	}
	p := map[string]any{
		"type":     "urn:elector:problem:backend-unavailable",
		"title":    "Backend unavailable",
		"status":   http.StatusServiceUnavailable,
		"detail":   "elector is starting: " + reason + "; retry shortly",
		"instance": r.URL.Path,
	}
	if r.URL.Path == "/readyz" {
		p["detail"] = "this replica is not ready: the backend is starting: " + reason
		p["checks"] = map[string]string{"backend": "starting"}
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(p)
}
