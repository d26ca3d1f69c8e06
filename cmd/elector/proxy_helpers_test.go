package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/electorhq/elector/internal/proxy"
)

// upstream is a leader's application: it answers its name and records the
// Elector-Term of each request the proxy forwards.
type upstream struct {
	name  string
	srv   *httptest.Server
	mu    sync.Mutex
	terms []string
}

func newUpstream(t *testing.T, name string) *upstream {
	t.Helper()
	u := &upstream{name: name}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.terms = append(u.terms, r.Header.Get(proxy.HeaderTerm))
		u.mu.Unlock()
		fmt.Fprint(w, u.name)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// addr is the metadata a candidate registers for u.
func (u *upstream) addr() json.RawMessage {
	return json.RawMessage(`{"addr":"` + strings.TrimPrefix(u.srv.URL, "http://") + `"}`)
}

// lastTerm is the Elector-Term of the last request.
func (u *upstream) lastTerm() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.terms) == 0 {
		return ""
	}
	return u.terms[len(u.terms)-1]
}

// campaign campaigns id with metadata and returns its token.
func campaign(t *testing.T, g *testGateway, id string, metadata json.RawMessage) string {
	t.Helper()
	req := campaignReq(id)
	req.Metadata = metadata
	_, token, err := g.c.Campaign(context.Background(), "e", req)
	if err != nil {
		t.Fatalf("campaign %s: %v", id, err)
	}
	return token
}
