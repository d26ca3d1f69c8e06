package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/webhooks"
)

// receiver is the soak's webhook endpoint: real HTTP on loopback, the URL
// /hooks/<election> per election, every request verified as a Standard
// Webhooks receiver would and recorded in a History.
type receiver struct {
	URL    string
	secret string
	h      *History
}

// startReceiver starts a receiver recording into h, closed when the test
// ends.
func startReceiver(t *testing.T, h *History) *receiver {
	t.Helper()
	r := &receiver{secret: webhooks.NewSecret(), h: h}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// ServeHTTP records the request as a Delivery and answers 204, or 400
// with what was wrong: a signature that does not verify, a body that is
// not an event, an election that is not the endpoint's.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	d := Delivery{Endpoint: strings.TrimPrefix(req.URL.Path, "/hooks/"), ID: req.Header.Get(webhooks.HeaderID), Received: time.Now()}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var p struct {
		Type string `json:"type"`
		Data struct {
			Election  string `json:"election"`
			Term      uint64 `json:"term"`
			Candidate *struct {
				ID string `json:"id"`
			} `json:"candidate"`
		} `json:"data"`
	}
	switch {
	case err != nil:
		d.Problem = "reading the body: " + err.Error()
	case req.Method != http.MethodPost:
		d.Problem = "method " + req.Method
	default:
		if err := webhooks.Verify([]string{r.secret}, req.Header, body, time.Now(), 0); err != nil {
			d.Problem = err.Error()
		} else if err := json.Unmarshal(body, &p); err != nil || p.Type == "" {
			d.Problem = fmt.Sprintf("body is not an event: %.200s", body)
		} else if p.Data.Election != d.Endpoint {
			d.Problem = fmt.Sprintf("event of election %q sent to the endpoint of %q", p.Data.Election, d.Endpoint)
		}
	}
	d.Type, d.Election, d.Term, d.Body = p.Type, p.Data.Election, p.Data.Term, body
	if p.Data.Candidate != nil {
		d.Candidate = p.Data.Candidate.ID
	}
	r.h.ObserveDelivery(d)
	if d.Problem != "" {
		http.Error(w, d.Problem, http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// subscribe registers the receiver's endpoint for election through the
// admin API of the gateway at base, signed with the receiver's secret,
// for every event type, and records in the history that it did.
func (r *receiver) subscribe(ctx context.Context, base, election string) error {
	body, _ := json.Marshal(map[string]string{"url": r.URL + "/hooks/" + election, "secret": r.secret})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/elections/"+election+"/subscriptions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("subscribing to %s: %s: %s", election, resp.Status, b)
	}
	r.h.Subscribe(election)
	return nil
}

func TestHistoryRecordsWhatTheReceiverVerifies(t *testing.T) {
	t.Parallel()
	h := &History{}
	r := startReceiver(t, h)
	event := `{"type":"leader.begin","timestamp":"2026-11-23T12:00:00Z","data":{"election":"e","term":7,"candidate":{"id":"a"}}}`
	tests := []struct {
		name    string
		path    string
		secret  string
		body    string
		status  int
		problem string // a part of the Delivery's Problem; none when accepted
	}{
		{"signed with the endpoint's secret", "/hooks/e", r.secret, event, http.StatusNoContent, ""},
		{"signed with another secret", "/hooks/e", webhooks.NewSecret(), event, http.StatusBadRequest, "no signature matches"},
		{"sent to another election's endpoint", "/hooks/f", r.secret, event, http.StatusBadRequest, `election "e" sent to the endpoint of "f"`},
		{"not an event", "/hooks/e", r.secret, `[1, 2]`, http.StatusBadRequest, "not an event"},
	}
	for i, tt := range tests {
		req, _ := http.NewRequest(http.MethodPost, r.URL+tt.path, strings.NewReader(tt.body))
		if err := webhooks.SetHeaders(req.Header, []string{tt.secret}, strconv.Itoa(10+i), time.Now(), []byte(tt.body)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		ds := h.Deliveries()
		if len(ds) != i+1 {
			t.Fatalf("%s: %d deliveries recorded, want %d", tt.name, len(ds), i+1)
		}
		d := ds[i]
		if resp.StatusCode != tt.status || d.ID != strconv.Itoa(10+i) ||
			(tt.problem == "") != (d.Problem == "") || !strings.Contains(d.Problem, tt.problem) {
			t.Errorf("%s: answered %d, recorded %+v; want %d and a problem with %q", tt.name, resp.StatusCode, d, tt.status, tt.problem)
		}
		if tt.problem == "" && (d.Type != "leader.begin" || d.Election != "e" || d.Term != 7 || d.Candidate != "a") {
			t.Errorf("%s: recorded %+v", tt.name, d)
		}
	}
}
