package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/electorhq/elector"
)

// readyTimeout bounds the readiness probe's question to the backend.
const readyTimeout = 2 * time.Second

// healthz answers 200 while the process serves HTTP at all (liveness).
func (a *api) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when this replica serves writes now and 503
// otherwise (readiness), naming each check in checks: backend (Gateway.
// Ready: the backend's write path answers and this replica's own writes
// are not failing), watch (the backend's cache caught up, where the
// backend can tell) and webhooks (the outbox is delivering, when
// Config.CheckOutbox). A load balancer stops sending requests to a
// replica that is not ready.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	checks := map[string]string{}
	var failed []string
	fail := func(name, state string, err error) {
		checks[name] = state
		failed = append(failed, name)
		a.log.LogAttrs(r.Context(), slog.LevelWarn, "not ready", slog.String("check", name), slog.String("error", err.Error()))
	}
	if err := a.gw.Ready(ctx); err != nil {
		fail("backend", "unreachable", err)
	} else {
		checks["backend"] = "ok"
	}
	if err := a.gw.CaughtUp(ctx); err != nil {
		fail("watch", "behind", err)
	} else {
		checks["watch"] = "ok"
	}
	switch {
	case a.cfg.Webhooks == nil || !a.cfg.CheckOutbox:
		checks["webhooks"] = "off"
	case !a.cfg.Webhooks.Running():
		fail("webhooks", "stopped", errors.New("the webhook outbox is not running"))
	default:
		checks["webhooks"] = "ok"
	}
	if len(failed) > 0 {
		e := errorf("backend-unavailable", "this replica is not ready: %s failed; retry shortly", strings.Join(failed, ", "))
		e.ext = map[string]any{"checks": checks}
		a.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}

// openapi serves the API's OpenAPI document.
func (a *api) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(elector.OpenAPI)
}
