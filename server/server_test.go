package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/server"
)

// TestHandlerAnswersProbesUntilTheBackendIsOpen: before Run has opened
// the backend, the handler says the replica lives but is not ready, and
// asks every other request to come back.
func TestHandlerAnswersProbesUntilTheBackendIsOpen(t *testing.T) {
	srv, err := server.New(server.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path   string
		status int
		detail string
	}{
		{"/healthz", http.StatusOK, ""},
		{"/readyz", http.StatusServiceUnavailable, "the backend is starting: opening the embedded backend"},
		{"/v1/elections/billing/leader", http.StatusServiceUnavailable, "elector is starting: opening the embedded backend; retry shortly"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
		var p struct{ Detail string }
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		if rec.Code != tt.status || !strings.Contains(p.Detail, tt.detail) || (tt.status != http.StatusOK && rec.Header().Get("Retry-After") == "") {
			t.Errorf("%s: %d %s %v; want %d saying %q", tt.path, rec.Code, rec.Body, rec.Header(), tt.status, tt.detail)
		}
	}
}

// TestReplicasOverOneBackendAgree: two servers over one backend
// (WithBackend) are replicas: a campaign on one leads on the other.
func TestReplicasOverOneBackendAgree(t *testing.T) {
	b := memory.New()
	one := servertest.Start(t, servertest.Backend(b))
	two := servertest.Start(t, servertest.Backend(b))
	res, err := http.Post(one.URL+"/v1/elections/billing/candidates", "application/json", strings.NewReader(`{"id":"node-a"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("campaign on one: %d", res.StatusCode)
	}
	res, err = http.Get(two.URL + "/v1/elections/billing/leader")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var leader struct{ ID string }
	if err := json.NewDecoder(res.Body).Decode(&leader); err != nil || res.StatusCode != http.StatusOK || leader.ID != "node-a" {
		t.Fatalf("leader on two: %d %+v %v; want node-a", res.StatusCode, leader, err)
	}
}

func TestRunRunsOnce(t *testing.T) {
	gw := servertest.Start(t)
	if err := gw.Server.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a second Run: %v", err)
	}
}

// TestFirstRequestsTransitionsAreLoggedAndCounted: the transitions of the
// first request a server answers reach its transition log and its
// metrics, though their goroutines may start after it (they start from
// the backend's head as it was before the server served: Gateway.Begin).
// The backend holds back every list of its elections (which is where a
// counter that did not start from that head would start) until the
// campaign has been answered.
func TestFirstRequestsTransitionsAreLoggedAndCounted(t *testing.T) {
	logs := &servertest.SyncBuffer{}
	b := &heldLists{Backend: memory.New(), release: make(chan struct{})}
	gw := servertest.Start(t, servertest.Backend(b), servertest.Logger(slog.New(slog.NewTextHandler(logs, nil))))
	res, err := http.Post(gw.URL+"/v1/elections/first/candidates", "application/json", strings.NewReader(`{"id":"node-a"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("campaign: %d", res.StatusCode)
	}
	close(b.release)
	eventually.True(t, 10*time.Second, "the first leadership logged", func() bool {
		return strings.Contains(logs.String(), `msg="leadership begins" election=first candidate=node-a term=1`)
	})
	servertest.WaitForMetric(t, gw.URL, `elector_leader_transitions_total{election="first",reason="none",type="leader.begin"} 1`)
}

// heldLists is a backend whose lists of elections wait until release is
// closed.
type heldLists struct {
	gateway.Backend
	release chan struct{}
}

func (h *heldLists) Elections(ctx context.Context) ([]gateway.Election, string, error) {
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	return h.Backend.Elections(ctx)
}
