package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"sync"
	"testing"

	"github.com/electorhq/elector/client"
)

// Reads made with a WithLocalRead context ask for consistency=local and
// answer what the same reads answer without it; other calls made with
// such a context ask for nothing more.
func TestLocalReadsAskForThemselvesOnly(t *testing.T) {
	gw := newGateway(t)
	u, err := url.Parse(gw.URL)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		queries = map[string]string{} // path → query of the last request
	)
	rp := httputil.NewSingleHostReverseProxy(u)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries[r.Method+" "+r.URL.Path] = r.URL.RawQuery
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	lastQuery := func(req string) string {
		mu.Lock()
		defer mu.Unlock()
		return queries[req]
	}

	ctx := context.Background()
	local := client.WithLocalRead(ctx)
	c := client.New(proxy.URL)
	_, tok, err := c.Campaign(local, "billing", client.CampaignRequest{ID: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Heartbeat(local, "billing", "node-a", tok); err != nil {
		t.Fatal(err)
	}
	for _, req := range []string{"POST /v1/elections/billing/candidates", "PUT /v1/elections/billing/candidates/node-a/heartbeat"} {
		if q := lastQuery(req); q != "" {
			t.Fatalf("%s with a local-read context: query %q, want none", req, q)
		}
	}

	reads := []struct {
		req  string
		read func(ctx context.Context) (any, error)
	}{
		{"GET /v1/elections/billing/leader", func(ctx context.Context) (any, error) { return c.Leader(ctx, "billing") }},
		{"GET /v1/elections/billing", func(ctx context.Context) (any, error) { return c.Election(ctx, "billing") }},
		{"GET /v1/elections", func(ctx context.Context) (any, error) { return c.Elections(ctx) }},
		{"GET /v1/elections/billing/candidates", func(ctx context.Context) (any, error) { return c.Candidates(ctx, "billing") }},
		{"GET /v1/elections/billing/candidates/node-a", func(ctx context.Context) (any, error) { return c.Candidate(ctx, "billing", "node-a") }},
	}
	for _, r := range reads {
		lin, err := r.read(ctx)
		if err != nil {
			t.Fatalf("%s: %v", r.req, err)
		}
		if q := lastQuery(r.req); q != "" {
			t.Fatalf("%s: query %q, want none", r.req, q)
		}
		loc, err := r.read(local)
		if err != nil {
			t.Fatalf("%s, local: %v", r.req, err)
		}
		if q := lastQuery(r.req); q != "consistency=local" {
			t.Fatalf("%s, local: query %q, want consistency=local", r.req, q)
		}
		if !reflect.DeepEqual(lin, loc) {
			t.Fatalf("%s: local read %+v, linearizable %+v", r.req, loc, lin)
		}
	}
}
