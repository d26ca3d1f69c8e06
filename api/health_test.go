package api

import (
	"net/http"
	"testing"
	"time"
)

// TestReadyzNamesEachCheck: the watch check is the replica's event hub,
// "not reported" until it first follows the backend, then "ok".
func TestReadyzNamesEachCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := e.do("GET", "/readyz", nil).expect(t, http.StatusOK).json(t)
		checks := m["checks"].(map[string]any)
		if checks["backend"] != "ok" || checks["webhooks"] != "off" {
			t.Fatalf("checks %v", checks)
		}
		if checks["watch"] == "ok" {
			return
		}
		if checks["watch"] != "not reported" || time.Now().After(deadline) {
			t.Fatalf("checks %v, want watch ok once the hub follows the backend", checks)
		}
		time.Sleep(5 * time.Millisecond)
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
