package api

import (
	"net/http"
	"testing"
)

// TestReadyzNamesEachCheck: each check answers by its name; the watch
// check is the backend's copy and the replica's event hub, ok from the
// start (before the hub first follows the backend, streams read the
// backend itself).
func TestReadyzNamesEachCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	m := e.do("GET", "/readyz", nil).expect(t, http.StatusOK).json(t)
	checks := m["checks"].(map[string]any)
	if checks["backend"] != "ok" || checks["webhooks"] != "off" || checks["watch"] != "ok" {
		t.Fatalf("checks %v, want backend, watch ok and webhooks off", checks)
	}
}

func TestReadyzFailsWhileTheOutboxIsNotRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{CheckOutbox: true}) // newEnv's webhook service never runs
	r := e.do("GET", "/readyz", nil).expect(t, http.StatusServiceUnavailable)
	if checks := r.json(t)["checks"].(map[string]any); checks["webhooks"] != "stopped" || checks["backend"] != "ok" {
		t.Fatalf("checks %v", checks)
	}
}
