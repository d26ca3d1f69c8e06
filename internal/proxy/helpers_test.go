package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/server"
)

// testGateway is a real gateway over a memory backend, served in-process,
// and a client of it.
type testGateway struct {
	srv *servertest.Gateway
	c   *client.Client
}

func newTestGateway(t *testing.T, opts ...servertest.Option) *testGateway {
	t.Helper()
	opts = append([]servertest.Option{servertest.Configure(func(c *server.Config) {
		c.API.RetryHint = api.MinRetryHint // the proxy's stream reconnects at once
	})}, opts...)
	srv := servertest.Start(t, opts...)
	return &testGateway{srv: srv, c: client.New(srv.URL)}
}

// upstream is a leader's application: it answers its name and records the
// Elector-Term of each request. Paths: /slow waits for release; /stream
// writes a chunk, waits for release, writes another; /ws takes a
// websocket-style upgrade and echoes lines.
type upstream struct {
	name    string
	srv     *httptest.Server
	release chan struct{} // closed by let
	once    sync.Once
	hits    atomic.Int32
	mu      sync.Mutex
	terms   []string
}

func newUpstream(t *testing.T, name string) *upstream {
	t.Helper()
	u := &upstream{name: name, release: make(chan struct{})}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(func() {
		u.let()
		u.srv.CloseClientConnections()
		u.srv.Close()
	})
	return u
}

// let releases the requests that wait.
func (u *upstream) let() { u.once.Do(func() { close(u.release) }) }

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

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.hits.Add(1)
	u.mu.Lock()
	u.terms = append(u.terms, r.Header.Get(HeaderTerm))
	u.mu.Unlock()
	switch r.URL.Path {
	case "/slow":
		<-u.release
		fmt.Fprintf(w, "%s slow", u.name)
	case "/stream":
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		fmt.Fprintf(w, "%s first\n", u.name)
		w.(http.Flusher).Flush()
		select {
		case <-u.release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "%s second\n", u.name)
	case "/ws":
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			fmt.Fprintf(brw, "%s: %s", u.name, line)
			if brw.Flush() != nil {
				return
			}
		}
	default:
		fmt.Fprint(w, u.name)
	}
}

// countingGateway is a reverse proxy in front of the test gateway that
// counts the requests it passes and can cut them all.
type countingGateway struct {
	srv   *httptest.Server
	mu    sync.Mutex
	paths []string
	down  atomic.Bool
}

func newCountingGateway(t *testing.T, g *testGateway) *countingGateway {
	t.Helper()
	target, _ := url.Parse(g.srv.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = nil
	c := &countingGateway{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.down.Load() {
			panic(http.ErrAbortHandler)
		}
		c.mu.Lock()
		c.paths = append(c.paths, r.Method+" "+r.URL.Path)
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	c.srv.Config.ErrorLog = nil
	t.Cleanup(func() {
		c.srv.CloseClientConnections()
		c.srv.Close()
	})
	return c
}

// requests are the requests passed so far.
func (c *countingGateway) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...)
}

// cut drops the connections and refuses new requests while down.
func (c *countingGateway) cut(down bool) {
	c.down.Store(down)
	if down {
		c.srv.CloseClientConnections()
	}
}

// startProxy serves a proxy of election e following gateways.
func startProxy(t *testing.T, staleAfter time.Duration, gateways ...string) (*Proxy, *Server, *servertest.SyncBuffer) {
	t.Helper()
	logs := &servertest.SyncBuffer{}
	p := New(Config{Election: "e", Key: "addr", StaleAfter: staleAfter, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ps, err := Serve(context.Background(), "127.0.0.1:0", p, gateways, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ps.Stop)
	return p, ps, logs
}

// routesTo waits until the proxy routes to leader in term.
func routesTo(t *testing.T, p *Proxy, leader string, term uint64) {
	t.Helper()
	eventually.True(t, 10*time.Second, fmt.Sprintf("the proxy to route to %q in term %d", leader, term), func() bool {
		rt, unknown := p.route()
		return unknown == "" && rt.leader == leader && rt.term == term
	})
}

// proxyGet sends GET path to the proxy and returns the status, the body and
// the answer.
func proxyGet(t *testing.T, hc *http.Client, ps *Server, path string) (int, string, *http.Response) {
	t.Helper()
	res, err := hc.Get("http://" + ps.addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res
}

// campaign campaigns id with metadata and returns its token.
func campaign(t *testing.T, g *testGateway, id string, metadata json.RawMessage) string {
	t.Helper()
	req := client.CampaignRequest{ID: id, TTL: time.Minute, Metadata: metadata}
	_, token, err := g.c.Campaign(context.Background(), "e", req)
	if err != nil {
		t.Fatalf("campaign %s: %v", id, err)
	}
	return token
}

// waitFollowing waits until g's goroutines that follow its backend for
// as long as it runs (the event hub, the transition log and the
// transitions counter, which may start only after it serves) are in
// place, so that a leak check does not take them for a request's: the
// leadership of a probe election is then in its log (which logs) and its
// metrics.
func waitFollowing(t *testing.T, g *testGateway, logs *servertest.SyncBuffer) {
	t.Helper()
	req := client.CampaignRequest{ID: "probe", TTL: time.Minute}
	if _, _, err := g.c.Campaign(context.Background(), "probe", req); err != nil {
		t.Fatalf("campaign in probe: %v", err)
	}
	eventually.True(t, 10*time.Second, "the probe's leadership logged", func() bool {
		return strings.Contains(logs.String(), `msg="leadership begins" election=probe `)
	})
	servertest.WaitForMetric(t, g.srv.URL, `elector_leader_transitions_total{election="probe",reason="none",type="leader.begin"} 1`)
}

// dialUpgrade opens a websocket-style upgrade of path through the proxy
// and returns the connection, with its reader, after the 101.
func dialUpgrade(t *testing.T, ps *Server, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", ps.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", path, ps.addr)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %s", res.Status)
	}
	return conn, br
}
