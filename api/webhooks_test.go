package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/webhooks"
)

// hookReceiver counts the webhooks it gets and answers 204.
func hookReceiver(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var ids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		ids = append(ids, r.Header.Get(webhooks.HeaderID))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ids...)
	}
}

// newHooksEnv is an env whose webhook service runs, delivering to loopback.
func newHooksEnv(t *testing.T) *env {
	t.Helper()
	var svc *webhooks.Service
	e := newEnv(t, Config{}, func(*httptest.Server) {})
	// Replace the idle service of newEnv by a running one over the same gateway.
	kv := e.gw.KV()
	svc = webhooks.New(e.gw, kv, webhooks.Config{AllowPrivateNetworks: true, PollInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(New(e.gw, Config{Webhooks: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return &env{t: t, srv: srv, gw: e.gw, log: e.log}
}

func TestSubscriptionLifecycle(t *testing.T) {
	t.Parallel()
	e := newHooksEnv(t)
	rcv, got := hookReceiver(t)
	base := "/v1/elections/billing/subscriptions"

	r := e.do("POST", base, map[string]any{"url": rcv.URL + "/hook", "types": []string{"leader.begin"}}).expect(t, http.StatusCreated)
	sub := r.json(t)
	id, secret := sub["id"].(string), sub["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") || r.Header.Get("Location") != base+"/"+id {
		t.Fatalf("created %s with Location %q", r.Body, r.Header.Get("Location"))
	}
	list := e.do("GET", base, nil).expect(t, http.StatusOK)
	if strings.Contains(string(list.Body), secret) {
		t.Fatal("the list shows the secret")
	}
	if strings.Contains(string(e.do("GET", base+"/"+id, nil).expect(t, http.StatusOK).Body), secret) {
		t.Fatal("get shows the secret")
	}

	e.campaign("billing", "node-a", "10s")
	eventually.True(t, 5*time.Second, "the begin delivered", func() bool { return len(got()) == 1 })
	var ds []any
	eventually.True(t, 5*time.Second, "the delivery logged as succeeded", func() bool {
		ds = e.do("GET", base+"/"+id+"/deliveries", nil).expect(t, http.StatusOK).json(t)["deliveries"].([]any)
		return len(ds) == 1 && ds[0].(map[string]any)["status"] == "succeeded"
	})
	d := ds[0].(map[string]any)
	if d["event_id"] != got()[0] || d["event_type"] != "leader.begin" {
		t.Fatalf("delivery %v, want the leader.begin %s", d, got()[0])
	}
	one := e.do("GET", base+"/"+id+"/deliveries/"+d["id"].(string), nil).expect(t, http.StatusOK).json(t)
	if len(one["attempts"].([]any)) != 1 {
		t.Fatalf("attempts %v", one["attempts"])
	}
	re := e.do("POST", base+"/"+id+"/deliveries/"+d["id"].(string)+"/redeliver", nil).expect(t, http.StatusOK).json(t)
	attempts := re["attempts"].([]any)
	if len(attempts) != 2 || attempts[1].(map[string]any)["manual"] != true {
		t.Fatalf("after redelivery: %v", attempts)
	}
	if ids := got(); len(ids) != 2 || ids[1] != ids[0] {
		t.Fatalf("redelivery webhook-ids %v, want the same id twice", ids)
	}
	e.do("GET", base+"/"+id+"/deliveries?limit=0", nil).expect(t, http.StatusBadRequest)
	e.do("GET", base+"/"+id+"/deliveries/nope", nil).expect(t, http.StatusNotFound)

	rot := e.do("POST", base+"/"+id+"/rotate-secret", nil).expect(t, http.StatusOK).json(t)
	if rot["secret"] == secret || len(rot["secrets"].([]any)) != 2 {
		t.Fatalf("rotated: %v", rot)
	}
	e.do("DELETE", base+"/"+id, nil).expect(t, http.StatusNoContent)
	if p := e.do("GET", base+"/"+id, nil).expect(t, http.StatusNotFound).problemType(t); p != "webhook-not-found" {
		t.Fatalf("problem %s", p)
	}
	e.do("GET", base+"/"+id+"/deliveries", nil).expect(t, http.StatusNotFound)
}

func TestSubscriptionInputIsChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	base := "/v1/elections/billing/subscriptions"
	tests := []struct {
		name  string
		body  any
		field string
	}{
		{"no url", map[string]any{}, "url"},
		{"relative url", map[string]any{"url": "/hook"}, "url"},
		{"unknown type", map[string]any{"url": "https://example.com/", "types": []string{"leader.start"}}, "types"},
		{"types not a list", map[string]any{"url": "https://example.com/", "types": "leader.begin"}, "types"},
		{"bad secret", map[string]any{"url": "https://example.com/", "secret": "hunter2"}, "secret"},
		{"unknown member", map[string]any{"url": "https://example.com/", "filter": 1}, "filter"},
		{"port above 65535", map[string]any{"url": "https://example.com:99999/"}, "url"},
		{"port 0", map[string]any{"url": "https://example.com:0/"}, "url"},
		{"url not UTF-8", "{\"url\":\"https://example.com/\xff\"}", "url"},
	}
	for _, tt := range tests {
		r := e.do("POST", base, tt.body).expect(t, http.StatusBadRequest)
		if f := r.json(t)["field"]; f != tt.field {
			t.Errorf("%s: field %v, want %s", tt.name, f, tt.field)
		}
	}
	if p := e.do("POST", base, map[string]any{"url": "ftp://example.com/"}).expect(t, 422).problemType(t); p != "webhook-destination-refused" {
		t.Errorf("ftp: %s", p)
	}
}

func TestPrivateDestinationsAreRefusedWithAProblem(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	guarded := webhooks.New(e.gw, e.gw.KV(), webhooks.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(New(e.gw, Config{Webhooks: guarded, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(srv.Close)
	g := &env{t: t, srv: srv, gw: e.gw, log: e.log}

	for _, u := range []string{"http://127.0.0.1:8080/", "http://169.254.169.254/latest/meta-data/", "http://10.1.2.3/", "http://localhost/", "http://[::1]/",
		"http://[::1%25lo]:19091/x", "http://[::1%25eth0]/", "http://[fe80::1%25lo]/"} {
		r := g.do("POST", "/v1/elections/billing/subscriptions", map[string]any{"url": u}).expect(t, 422)
		detail, _ := r.json(t)["detail"].(string)
		if p := r.problemType(t); p != "webhook-destination-refused" || strings.Count(detail, "allow_private_networks") != 1 ||
			!strings.Contains(detail, "--webhooks-allow-private-networks") || !strings.Contains(detail, "ELECTOR_WEBHOOKS_ALLOW_PRIVATE_NETWORKS") {
			t.Errorf("%s: %s; want the setting named once, with its flag and environment variable", u, r.Body)
		}
		r = g.do("POST", "/v1/elections/billing/candidates", map[string]any{"id": "a", "webhook": map[string]any{"url": u}}).expect(t, 422)
		if p := r.problemType(t); p != "webhook-destination-refused" {
			t.Errorf("campaign with %s: %s", u, r.Body)
		}
	}
	r := g.do("POST", "/v1/elections/billing/candidates", map[string]any{"id": "a", "webhook": map[string]any{"url": "http://169.254.169.254/"}}).expect(t, 422)
	if p := r.problemType(t); p != "webhook-destination-refused" {
		t.Errorf("campaign: %s", r.Body)
	}
	if _, err := e.gw.Election(context.Background(), "billing"); err == nil {
		t.Error("a refused campaign created the election")
	}
	// The same URLs are accepted where private networks are allowed.
	e.do("POST", "/v1/elections/billing/subscriptions", map[string]any{"url": "http://127.0.0.1:8080/"}).expect(t, http.StatusCreated)
}

func TestCampaignWithAWebhook(t *testing.T) {
	t.Parallel()
	e := newHooksEnv(t)
	rcv, got := hookReceiver(t)
	r := e.do("POST", "/v1/elections/own/candidates", map[string]any{
		"id": "node-a", "ttl": "10s", "webhook": map[string]any{"url": rcv.URL, "begin_timeout": "5s"},
	}).expect(t, http.StatusCreated).json(t)
	tok, secret := r["token"].(string), r["webhook_secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("webhook_secret %q", secret)
	}
	eventually.True(t, 5*time.Second, "the candidate's begin", func() bool { return len(got()) == 1 })
	path := "/v1/elections/own/candidates/node-a/deliveries"
	eventually.True(t, 5*time.Second, "the begin logged", func() bool {
		ds := e.do("GET", path, nil, token(tok)).expect(t, http.StatusOK).json(t)["deliveries"].([]any)
		return len(ds) == 1 && ds[0].(map[string]any)["status"] == "succeeded"
	})
	e.do("GET", path, nil).expect(t, http.StatusBadRequest)
	e.do("GET", path, nil, token("ect_not-it")).expect(t, http.StatusForbidden)

	// The token is checked before anything about the candidate's webhook
	// is looked at: a wrong token (another candidate's, or none of ours)
	// is 403 and learns nothing; the candidate's own token learns that it
	// campaigned without a webhook (404).
	tb := e.campaign("own", "node-b", "10s")
	for _, tok := range []string{tok, "ect_not-it"} {
		if p := e.do("GET", "/v1/elections/own/candidates/node-b/deliveries", nil, token(tok)).expect(t, http.StatusForbidden).problemType(t); p != "candidate-token-mismatch" {
			t.Fatalf("problem %s", p)
		}
		if p := e.do("POST", "/v1/elections/own/candidates/node-b/deliveries/dlv_x/redeliver", nil, token(tok)).expect(t, http.StatusForbidden).problemType(t); p != "candidate-token-mismatch" {
			t.Fatalf("redeliver: problem %s", p)
		}
	}
	if p := e.do("GET", "/v1/elections/own/candidates/node-b/deliveries", nil, token(tb)).expect(t, http.StatusNotFound).problemType(t); p != "webhook-not-found" {
		t.Fatalf("the candidate's own token: problem %s, want webhook-not-found", p)
	}
	e.do("GET", path, nil, token(tb)).expect(t, http.StatusForbidden)
	for _, bad := range []map[string]any{{"url": 1}, {"url": rcv.URL, "begin_timeout": "0s"}, {"url": rcv.URL, "begin_timeout": "2h"}, {"uri": rcv.URL}, {}} {
		e.do("POST", "/v1/elections/own/candidates", map[string]any{"id": "node-c", "webhook": bad}).expect(t, http.StatusBadRequest)
	}
}

// TestWebhooksUnavailableWithoutTheService: an API built without a
// webhook service (Config.Webhooks nil) answers its webhook calls 501.
func TestWebhooksUnavailableWithoutTheService(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	srv := httptest.NewServer(New(e.gw, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(srv.Close)
	g := &env{t: t, srv: srv, gw: e.gw, log: e.log}
	if p := g.do("GET", "/v1/elections/x/subscriptions", nil).expect(t, http.StatusNotImplemented).problemType(t); p != "webhooks-unavailable" {
		t.Fatalf("problem %s", p)
	}
	g.do("POST", "/v1/elections/x/candidates", map[string]any{"id": "a", "webhook": map[string]any{"url": "https://example.com/"}}).expect(t, http.StatusNotImplemented)
}
