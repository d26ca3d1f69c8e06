package api

import (
	"net/http"
	"testing"
)

func TestReadyzNamesEachCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	m := e.do("GET", "/readyz", nil).expect(t, http.StatusOK).json(t)
	checks := m["checks"].(map[string]any)
	if checks["backend"] != "ok" || checks["watch"] != "not reported" || checks["webhooks"] != "off" {
		t.Fatalf("checks %v", checks)
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
