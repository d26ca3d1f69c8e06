package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
)

// TestProxyFollowsAHandoverFromTheEventStream: the proxy learns of the new
// leader from the leader.begin event its stream carries (it sends the
// gateway nothing but that one stream), and the next request reaches the
// new leader. A request in flight at the handover finishes on the old one.
func TestProxyFollowsAHandoverFromTheEventStream(t *testing.T) {
	g := newTestGateway(t)
	front := newCountingGateway(t, g)
	a, b := newUpstream(t, "a"), newUpstream(t, "b")
	tokenA := campaign(t, g, "a", a.addr())
	campaign(t, g, "b", b.addr())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := g.c.Watch(ctx, "e", "")
	if err != nil {
		t.Fatal(err)
	}

	p, ps, logs := startProxy(t, time.Minute, front.srv.URL)
	routesTo(t, p, "a", 1)
	hc := &http.Client{}
	if code, body, _ := proxyGet(t, hc, ps, "/"); code != http.StatusOK || body != "a" || a.lastTerm() != "1" {
		t.Fatalf("before the handover: %d %q (term %q); want a's answer with Elector-Term 1", code, body, a.lastTerm())
	}
	// A request a is still answering when it resigns.
	inFlight := make(chan string, 1)
	go func() {
		res, err := hc.Get("http://" + ps.addr + "/slow")
		if err != nil {
			inFlight <- err.Error()
			return
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		inFlight <- fmt.Sprintf("%d %s", res.StatusCode, body)
	}()
	eventually.True(t, 5*time.Second, "the slow request to reach a", func() bool { return a.hits.Load() == 2 })

	if err := g.c.Resign(ctx, "e", "a", tokenA); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for len(seen) == 0 || !strings.HasPrefix(seen[len(seen)-1], client.EventLeaderBegin) {
		ev := servertest.NextLeaderEvent(t, events)
		id := ""
		if ev.Data.Candidate != nil {
			id = ev.Data.Candidate.ID
		}
		seen = append(seen, fmt.Sprintf("%s %s %d %s", ev.Type, id, ev.Data.Term, ev.Data.Reason))
	}
	began := time.Now()
	if want := []string{"leader.end a 1 resigned", "leader.begin b 2 resigned"}; !slices.Equal(seen, want) {
		t.Fatalf("events %q; want %q", seen, want)
	}
	routesTo(t, p, "b", 2)
	rt, _ := p.route()
	t.Logf("the proxy heard of b's leadership %s after this test's own stream delivered its leader.begin (not asserted)", rt.heard.Sub(began))
	if code, body, _ := proxyGet(t, hc, ps, "/"); code != http.StatusOK || body != "b" || b.lastTerm() != "2" {
		t.Fatalf("after the handover: %d %q (term %q); want b's answer with Elector-Term 2", code, body, b.lastTerm())
	}
	a.let()
	if got := <-inFlight; got != "200 a slow" {
		t.Fatalf("the request in flight at the handover got %q; want it finished by a", got)
	}
	if got := front.requests(); !slices.Equal(got, []string{"GET /v1/elections/e/events"}) {
		t.Fatalf("the proxy sent the gateway %q; want one event stream and nothing else", got)
	}
	if !strings.Contains(logs.String(), `msg="proxy: forwarding to the leader" leader=b term=2`) {
		t.Errorf("logs do not say where the proxy forwards:\n%s", logs)
	}
}

// problemOf decodes a problem answer and checks its headers.
func problemOf(t *testing.T, res *http.Response, body string) map[string]any {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q; want application/problem+json", ct)
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("problem %q: %v", body, err)
	}
	if int(p["status"].(float64)) != res.StatusCode || p["title"] == "" || p["detail"] == "" {
		t.Fatalf("problem %v does not match its status %d", p, res.StatusCode)
	}
	return p
}

func TestProxyAnswers503WhileThereIsNoLeader(t *testing.T) {
	g := newTestGateway(t)
	a := newUpstream(t, "a")
	p, ps, _ := startProxy(t, time.Minute, g.srv.URL)
	hc := &http.Client{}
	eventually.True(t, 10*time.Second, "the proxy to hear the election", func() bool { _, unknown := p.route(); return unknown == "" })
	code, body, res := proxyGet(t, hc, ps, "/x")
	pr := problemOf(t, res, body)
	if code != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" || pr["type"] != problemProxyNoLeader ||
		pr["instance"] != "/x" || !strings.Contains(pr["detail"].(string), `election "e" has no leader`) {
		t.Fatalf("leaderless: %d, Retry-After %q, %s", code, res.Header.Get("Retry-After"), body)
	}
	// A leader arrives: its requests pass; it resigns: 503 again.
	token := campaign(t, g, "a", a.addr())
	routesTo(t, p, "a", 1)
	if code, body, _ := proxyGet(t, hc, ps, "/"); code != http.StatusOK || body != "a" {
		t.Fatalf("with a leading: %d %q", code, body)
	}
	if err := g.c.Resign(context.Background(), "e", "a", token); err != nil {
		t.Fatal(err)
	}
	routesTo(t, p, "", 1)
	if code, body, res := proxyGet(t, hc, ps, "/"); code != http.StatusServiceUnavailable || problemOf(t, res, body)["type"] != problemProxyNoLeader {
		t.Fatalf("after a resigned: %d %s", code, body)
	}
	if a.hits.Load() != 1 {
		t.Fatalf("a got %d requests; want the one while it led", a.hits.Load())
	}
}

func TestProxyAnswers503WhenItCannotFollowTheElection(t *testing.T) {
	g := newTestGateway(t)
	front := newCountingGateway(t, g)
	a := newUpstream(t, "a")
	campaign(t, g, "a", a.addr())
	hc := &http.Client{}

	// A gateway that is not there: nothing heard yet.
	_, lone, _ := startProxy(t, time.Minute, "http://127.0.0.1:1")
	code, body, res := proxyGet(t, hc, lone, "/")
	if pr := problemOf(t, res, body); code != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" ||
		pr["type"] != problemProxyLeaderUnknown || !strings.Contains(pr["detail"].(string), "has not heard who leads") {
		t.Fatalf("with no gateway: %d %s", code, body)
	}

	// A stream that stays down longer than stale-after.
	p, ps, _ := startProxy(t, 200*time.Millisecond, front.srv.URL)
	routesTo(t, p, "a", 1)
	front.cut(true)
	eventually.True(t, 10*time.Second, "the proxy to give up on the lost stream", func() bool {
		code, body, res := proxyGet(t, hc, ps, "/")
		return code == http.StatusServiceUnavailable && problemOf(t, res, body)["type"] == problemProxyLeaderUnknown &&
			strings.Contains(body, "lost the event stream")
	})
	front.cut(false)
	eventually.True(t, 10*time.Second, "the proxy to forward again once the stream is back", func() bool {
		code, body, _ := proxyGet(t, hc, ps, "/")
		return code == http.StatusOK && body == "a"
	})
}

func TestProxyRefusesALeaderWithoutAUsableAddress(t *testing.T) {
	for _, md := range []string{`{}`, `{"addr":"0.0.0.0:8080"}`, `{"addr":"file:///etc/passwd"}`, `{"addr":7}`} {
		t.Run(md, func(t *testing.T) {
			g := newTestGateway(t)
			a := newUpstream(t, "a")
			tokenA := campaign(t, g, "a", a.addr())
			campaign(t, g, "b", json.RawMessage(md))
			p, ps, logs := startProxy(t, time.Minute, g.srv.URL)
			routesTo(t, p, "a", 1)
			hc := &http.Client{}
			if code, body, _ := proxyGet(t, hc, ps, "/"); code != http.StatusOK || body != "a" {
				t.Fatalf("a leading: %d %q", code, body)
			}
			if err := g.c.Resign(context.Background(), "e", "a", tokenA); err != nil {
				t.Fatal(err)
			}
			routesTo(t, p, "b", 2)
			code, body, res := proxyGet(t, hc, ps, "/")
			pr := problemOf(t, res, body)
			if code != http.StatusBadGateway || pr["type"] != problemProxyAddress || pr["leader"] != "b" ||
				!strings.Contains(pr["detail"].(string), `leader "b" (term 2)`) {
				t.Fatalf("b leading without an address: %d %s", code, body)
			}
			if a.hits.Load() != 1 {
				t.Fatalf("a got %d requests; the proxy must not fall back on an old leader's address", a.hits.Load())
			}
			if !strings.Contains(logs.String(), "registered no address to forward to") {
				t.Errorf("logs do not say why:\n%s", logs)
			}
		})
	}
}

func TestProxyAnswers502WhenTheLeaderDoesNotAnswer(t *testing.T) {
	g := newTestGateway(t)
	a := newUpstream(t, "a")
	addr := a.addr()
	a.srv.Close() // registered, but nobody listens there
	campaign(t, g, "a", addr)
	p, ps, _ := startProxy(t, time.Minute, g.srv.URL)
	routesTo(t, p, "a", 1)
	code, body, res := proxyGet(t, &http.Client{}, ps, "/")
	if pr := problemOf(t, res, body); code != http.StatusBadGateway || pr["type"] != problemProxyUnreachable || !strings.Contains(pr["detail"].(string), "connection refused") {
		t.Fatalf("leader not listening: %d %s", code, body)
	}
}

// TestProxyPassesStreamsThroughAndCutsThemAtAHandover: chunks reach the
// client before the leader has finished its answer, for a plain chunked
// answer and an event stream; an event stream is cut when its leader's
// leadership ends, a chunked download is not.
func TestProxyPassesStreamsThroughAndCutsThemAtAHandover(t *testing.T) {
	g := newTestGateway(t)
	a, b := newUpstream(t, "a"), newUpstream(t, "b")
	tokenA := campaign(t, g, "a", a.addr())
	campaign(t, g, "b", b.addr())
	p, ps, _ := startProxy(t, time.Minute, g.srv.URL)
	routesTo(t, p, "a", 1)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func(accept string) (*http.Response, func() string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ps.addr+"/stream", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		buf := make([]byte, 64)
		return res, func() string {
			n, err := res.Body.Read(buf)
			if err != nil && n == 0 {
				return err.Error()
			}
			return string(buf[:n])
		}
	}
	chunked, readChunked := open("")
	sse, readSSE := open("text/event-stream")
	// a has not written its second chunk: it waits for release.
	if got := readChunked(); got != "a first\n" {
		t.Fatalf("chunked: first read %q", got)
	}
	if got := readSSE(); got != "a first\n" || sse.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("event stream: first read %q (%s)", got, sse.Header.Get("Content-Type"))
	}
	if err := g.c.Resign(context.Background(), "e", "a", tokenA); err != nil {
		t.Fatal(err)
	}
	routesTo(t, p, "b", 2)
	if got := readSSE(); got != "unexpected EOF" {
		t.Fatalf("the event stream to a after the handover read %q; want it cut", got)
	}
	a.let()
	if got := readChunked(); got != "a second\n" || chunked.StatusCode != http.StatusOK {
		t.Fatalf("chunked: second read %q; want a's answer finished", got)
	}
}

// TestProxyPassesAWebsocketAndCutsItAtAHandover.
func TestProxyPassesAWebsocketAndCutsItAtAHandover(t *testing.T) {
	g := newTestGateway(t)
	a, b := newUpstream(t, "a"), newUpstream(t, "b")
	tokenA := campaign(t, g, "a", a.addr())
	campaign(t, g, "b", b.addr())
	p, ps, _ := startProxy(t, time.Minute, g.srv.URL)
	routesTo(t, p, "a", 1)

	conn, br := dialUpgrade(t, ps, "/ws")
	for _, line := range []string{"hello\n", "again\n"} {
		fmt.Fprint(conn, line)
		if got, err := br.ReadString('\n'); err != nil || got != "a: "+line {
			t.Fatalf("echo of %q: %q, %v", line, got, err)
		}
	}
	if a.lastTerm() != "1" {
		t.Fatalf("the upgrade reached a with Elector-Term %q; want 1", a.lastTerm())
	}
	if err := g.c.Resign(context.Background(), "e", "a", tokenA); err != nil {
		t.Fatal(err)
	}
	routesTo(t, p, "b", 2)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := br.ReadString('\n'); err != io.EOF {
		t.Fatalf("the websocket to a after the handover read %q, %v; want it closed", got, err)
	}
	conn, br = dialUpgrade(t, ps, "/ws")
	fmt.Fprint(conn, "hello\n")
	if got, err := br.ReadString('\n'); err != nil || got != "b: hello\n" {
		t.Fatalf("a new websocket: %q, %v; want b's echo", got, err)
	}
}

// TestProxyLeavesNoGoroutineBehind: stopping the proxy ends its stream of
// events, the requests it forwards (a websocket and an event stream among
// them) and every goroutine it started.
func TestProxyLeavesNoGoroutineBehind(t *testing.T) {
	gwLogs := &servertest.SyncBuffer{}
	g := newTestGateway(t, servertest.Logger(slog.New(slog.NewTextHandler(gwLogs, nil))))
	a := newUpstream(t, "a")
	campaign(t, g, "a", a.addr())
	waitFollowing(t, g, gwLogs)
	hc := &http.Client{Transport: &http.Transport{}}
	before := goleak.IgnoreCurrent()

	p := New(Config{Election: "e", Key: "addr", StaleAfter: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	ps, err := Serve(context.Background(), "127.0.0.1:0", p, []string{g.srv.URL}, nil, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	routesTo(t, p, "a", 1)
	conn, br := dialUpgrade(t, ps, "/ws")
	req, _ := http.NewRequest(http.MethodGet, "http://"+ps.addr+"/stream", nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if code, body, _ := proxyGet(t, hc, ps, "/"); code != http.StatusOK || body != "a" {
		t.Fatalf("%d %q", code, body)
	}

	ps.stop()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadString('\n'); err == nil || os.IsTimeout(err) {
		t.Fatal("the websocket outlived the proxy")
	}
	if _, err := io.ReadAll(res.Body); err == nil {
		t.Fatal("the event stream ended cleanly; want it cut with the proxy")
	}
	res.Body.Close()
	conn.Close()
	hc.CloseIdleConnections()
	if err := <-ps.errc; err != nil {
		t.Fatalf("the feed stopped with %v", err)
	}
	// The gateway ends its side of the cut stream when its server notices
	// the closed connection, which a loaded machine may take a moment to do;
	// what must not happen is a goroutine that never ends.
	eventually.NoError(t, 10*time.Second, "every goroutine started since the proxy to end", func() error {
		return goleak.Find(before)
	})
}

// TestProxyMovesItsStreamToTheNextGateway: with several gateways, a stream
// whose gateway goes away moves to the next, and the proxy goes on
// following the election there.
func TestProxyMovesItsStreamToTheNextGateway(t *testing.T) {
	g := newTestGateway(t)
	front := newCountingGateway(t, g)
	a, b := newUpstream(t, "a"), newUpstream(t, "b")
	tokenA := campaign(t, g, "a", a.addr())
	campaign(t, g, "b", b.addr())
	p, ps, logs := startProxy(t, time.Minute, front.srv.URL, g.srv.URL)
	routesTo(t, p, "a", 1)
	front.cut(true) // for good
	eventually.True(t, 10*time.Second, "the stream to move", func() bool { return strings.Contains(logs.String(), "moving to the next gateway") })
	if err := g.c.Resign(context.Background(), "e", "a", tokenA); err != nil {
		t.Fatal(err)
	}
	routesTo(t, p, "b", 2)
	if code, body, _ := proxyGet(t, &http.Client{}, ps, "/"); code != http.StatusOK || body != "b" {
		t.Fatalf("after the move: %d %q", code, body)
	}
}
