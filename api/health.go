package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/electorhq/elector"
)

// readyTimeout bounds the readiness probe's question to the backend.
const readyTimeout = 2 * time.Second

// healthz answers 200 while the process serves HTTP at all (liveness).
func (a *api) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when the backend can serve and 503 otherwise
// (readiness): a load balancer stops sending requests to a replica whose
// backend is unreachable.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := a.gw.Ready(ctx); err != nil {
		a.log.LogAttrs(r.Context(), slog.LevelWarn, "not ready", slog.String("error", err.Error()))
		a.writeError(w, r, errorf("backend-unavailable", "the coordination backend is not ready; retry shortly"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// openapi serves the API's OpenAPI document.
func (a *api) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(elector.OpenAPI)
}
