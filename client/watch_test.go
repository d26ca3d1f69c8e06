package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// next receives one event or fails the test after a few seconds.
func next(t *testing.T, ch <-chan client.Event) client.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("event stream closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return client.Event{}
	}
}

func TestWatchStartsWithResetAndResumesAfterADroppedConnection(t *testing.T) {
	srv := newGateway(t)
	proxy := newCuttableProxy(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := client.New(proxy.URL, client.WithReconnectDelay(20*time.Millisecond))
	// Campaigns go to the gateway itself, which the cut does not touch.
	camp := client.New(srv.URL, client.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
	if _, _, err := camp.Campaign(ctx, "w", client.CampaignRequest{ID: "first", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Watch(ctx, "w", "")
	if err != nil {
		t.Fatal(err)
	}
	reset := next(t, ch)
	if reset.Type != client.EventReset || reset.Snapshot == nil || reset.Snapshot.Leader == nil || reset.Snapshot.Leader.ID != "first" || reset.ID == "" {
		t.Fatalf("first event %+v", reset)
	}

	// Each campaign is one candidate.joined event; the connection is cut
	// between every two of them.
	const n = 6
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		if _, _, err := camp.Campaign(ctx, "w", client.CampaignRequest{ID: id, TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		ev := next(t, ch)
		if ev.Type != client.EventCandidateJoined || ev.Data.Candidate == nil || ev.Data.Candidate.ID != id {
			t.Fatalf("event %d: %+v, want candidate.joined of %s", i, ev, id)
		}
		if seen[ev.ID] || ev.ID == "" {
			t.Fatalf("event id %q twice or empty", ev.ID)
		}
		seen[ev.ID] = true
		if i%2 == 0 {
			proxy.CloseClientConnections()
			// Campaign while the watcher is away: it must get this one
			// when it resumes, once.
			i++
			id := fmt.Sprintf("c%d", i)
			if _, _, err := camp.Campaign(ctx, "w", client.CampaignRequest{ID: id, TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			ev := next(t, ch)
			if ev.Type != client.EventCandidateJoined || ev.Data.Candidate.ID != id || seen[ev.ID] {
				t.Fatalf("after reconnecting: %+v, want candidate.joined of %s once", ev, id)
			}
			seen[ev.ID] = true
		}
	}
	select {
	case ev := <-ch:
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	for range ch { // the channel closes once ctx ends
	}
}

func TestWatchFailsAtOnceForABadElectionName(t *testing.T) {
	srv := newGateway(t)
	_, err := client.New(srv.URL).Watch(context.Background(), "Not Valid", "")
	if err == nil {
		t.Fatal("no error")
	}
}

// TestWatchReconnectsAfterASilentConnection freezes the connection of a
// watch (a proxy stops passing its bytes and keeps it open, as a peer
// that vanished without closing does): after the idle timeout the watch
// reconnects and resumes with the events it missed.
func TestWatchReconnectsAfterASilentConnection(t *testing.T) {
	srv := newGateway(t)
	proxy := newFreezingProxy(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := client.New(proxy.URL, client.WithReconnectDelay(20*time.Millisecond), client.WithWatchIdleTimeout(500*time.Millisecond))
	camp := client.New(srv.URL)
	if _, _, err := camp.Campaign(ctx, "idle", client.CampaignRequest{ID: "first", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Watch(ctx, "idle", "")
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch); ev.Type != client.EventReset {
		t.Fatalf("first event %+v, want the reset", ev)
	}
	proxy.freeze() // the open connection passes nothing more; new ones do
	if _, _, err := camp.Campaign(ctx, "idle", client.CampaignRequest{ID: "second", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	ev := next(t, ch)
	if ev.Type != client.EventCandidateJoined || ev.Data.Candidate == nil || ev.Data.Candidate.ID != "second" {
		t.Fatalf("after the silence: %+v, want candidate.joined of second", ev)
	}
	if n := proxy.connections.Load(); n < 2 {
		t.Fatalf("%d connections through the proxy, want a reconnection", n)
	}
}

// freezingProxy passes event streams to a gateway until freeze, after
// which the connections it has pass nothing more and stay open until the
// client closes them; later connections pass again.
type freezingProxy struct {
	*httptest.Server
	generation  atomic.Int64
	connections atomic.Int64
}

func newFreezingProxy(t *testing.T, target string) *freezingProxy {
	t.Helper()
	p := &freezingProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.connections.Add(1)
		gen := p.generation.Load()
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if p.generation.Load() != gen {
				<-r.Context().Done() // frozen: silent, and open until the client leaves
				return
			}
			if n > 0 {
				_, _ = w.Write(buf[:n])
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(p.Close)
	return p
}

// freeze makes the connections open now silent.
func (p *freezingProxy) freeze() { p.generation.Add(1) }
