package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
)

// TestReadyzNamesEachCheck: the watch check is the replica's event hub,
// "not reported" until it first follows the backend, then "ok".
func TestReadyzNamesEachCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	eventually.True(t, 10*time.Second, "the watch check ok once the hub follows the backend", func() bool {
		m := e.do("GET", "/readyz", nil).expect(t, http.StatusOK).json(t)
		checks := m["checks"].(map[string]any)
		if checks["backend"] != "ok" || checks["webhooks"] != "off" || (checks["watch"] != "ok" && checks["watch"] != "not reported") {
			t.Fatalf("checks %v", checks)
		}
		return checks["watch"] == "ok"
	})
}

func TestReadyzFailsWhileTheOutboxIsNotRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{CheckOutbox: true}) // newEnv's webhook service never runs
	r := e.do("GET", "/readyz", nil).expect(t, http.StatusServiceUnavailable)
	if checks := r.json(t)["checks"].(map[string]any); checks["webhooks"] != "stopped" || checks["backend"] != "ok" {
		t.Fatalf("checks %v", checks)
	}
}
