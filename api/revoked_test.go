package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/gateway"
)

// TestRevokedCandidacyIsCandidateNotFoundSayingWhen: a candidacy the
// backend ended before its TTL (an etcd lease revoked early) is answered
// 404 candidate-not-found, so that every client campaigns again, with a
// revoked member saying when it ended and when it should have; the answer
// matches the heartbeat's 404 in openapi.yaml.
func TestRevokedCandidacyIsCandidateNotFoundSayingWhen(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 1, 500_000_000, time.UTC)
	req := httptest.NewRequest(http.MethodPut, "/v1/elections/billing/candidates/node-a/heartbeat", nil)
	req.Header.Set(TokenHeader, "tok")
	rc := chi.NewRouteContext()
	rc.URLParams.Add("election", "billing")
	rc.URLParams.Add("id", "node-a")
	req = req.WithContext(context.WithValue(req.Context(), chi.RouteCtxKey, rc))
	err := fmt.Errorf("etcd: heartbeat: %w", &gateway.CandidacyRevokedError{Election: "billing", ID: "node-a", At: at, ExpiresAt: at.Add(4 * time.Second)})
	w := httptest.NewRecorder()
	writeProblem(w, problemFor(req, err))
	r := response{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
	validate(t, req, r, false)
	if r.Status != http.StatusNotFound || r.problemType(t) != "candidate-not-found" {
		t.Fatalf("%d %s, want 404 candidate-not-found", r.Status, r.Body)
	}
	revoked, _ := r.json(t)["revoked"].(map[string]any)
	if revoked["at"] != "2026-11-22T10:00:01.5Z" || revoked["expires_at"] != "2026-11-22T10:00:05.5Z" {
		t.Fatalf("revoked = %v, want when it ended and when it should have", revoked)
	}
}
