package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/gateway"
)

// TestContendedWriteIsA503SayingNothingWasWritten: a write that lost to
// other writes of its election on every attempt gateway.Conflicts allows
// is answered 503 election-contended (not backend-unavailable, not a
// 500), saying that its write was not made and the request may be sent
// again; the answer matches openapi.yaml.
func TestContendedWriteIsA503SayingNothingWasWritten(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/v1/elections/billing/candidates", strings.NewReader(`{"id":"node-a"}`))
	rc := chi.NewRouteContext()
	rc.URLParams.Add("election", "billing")
	req = req.WithContext(context.WithValue(req.Context(), chi.RouteCtxKey, rc))
	err := fmt.Errorf("nats: campaign %q: %w", "billing", gateway.Conflicts.Exhausted())
	w := httptest.NewRecorder()
	writeProblem(w, problemFor(req, err))
	r := response{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
	validate(t, req, r, false)
	if r.Status != http.StatusServiceUnavailable || r.problemType(t) != "election-contended" {
		t.Fatalf("%d %s, want 503 election-contended", r.Status, r.Body)
	}
	if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, `"billing"`) || !strings.Contains(d, "before its write was made; send it again") {
		t.Fatalf("detail %q does not name the election and say its write was not made", d)
	}
}
