package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"github.com/go-chi/chi/v5"
)

// rawExchange sends raw bytes to the test server on a connection of its
// own, then, unless keepOpen, reads and returns its answer. It fails the
// test if no answer comes within 10 s (the connection would otherwise
// hang the test).
func (e *env) rawExchange(t *testing.T, raw string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to %q: %v", clip(raw), err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

// rawProblem reads a raw answer, checks it against openapi.yaml as the
// answer to req, and returns it.
func rawProblem(t *testing.T, req *http.Request, res *http.Response) response {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{Status: res.StatusCode, Header: res.Header, Body: b}
	validate(t, req, r, false)
	return r
}

// noErrorLogged fails the test if the log holds an ERROR line.
func noErrorLogged(t *testing.T, e *env) {
	t.Helper()
	for _, line := range strings.Split(e.log.String(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			t.Errorf("logged as an error: %s", line)
		}
	}
}

func TestStalledBodyIsAnswered408(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{BodyTimeout: 200 * time.Millisecond})
	const path = "/v1/elections/slow/candidates"
	// Each announces 1,000 bytes and sends 6: without a body deadline
	// these connections are held until their clients give up.
	const stalled = 30
	conns := make([]net.Conn, stalled)
	for i := range conns {
		c, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: elector\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"id\":"); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for _, c := range conns {
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer to a stalled body: %v", err)
		}
		r := rawProblem(t, httptest.NewRequest("POST", path, nil), res).expect(t, http.StatusRequestTimeout)
		if p := r.problemType(t); p != "request-timeout" {
			t.Fatalf("problem %s", p)
		}
		if !res.Close {
			t.Error("the connection of a stalled body is kept open")
		}
	}
	if _, err := e.gw.Election(context.Background(), "slow"); err == nil {
		t.Error("a stalled campaign created the election")
	}
	noErrorLogged(t, e)
}

func TestBodyDeadlineDoesNotCutABodyThatArrivedInTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{BodyTimeout: time.Second})
	// Every body-reading operation still works, and the connection is
	// reused after the deadline was lifted.
	e.campaign("quick", "a", "30s")
	e.do("PATCH", "/v1/elections/quick", map[string]any{"error_cooldown": "1s"}).expect(t, http.StatusOK)
	e.campaign("quick", "b", "30s")
}

func TestMalformedChunkedBodyIs400(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	const path = "/v1/elections/framing/candidates"
	res := e.rawExchange(t, "POST "+path+" HTTP/1.1\r\nHost: elector\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{\"id\":\"a\"}\r\n0\r\n\r\n")
	r := rawProblem(t, httptest.NewRequest("POST", path, nil), res).expect(t, http.StatusBadRequest)
	if p := r.problemType(t); p != "malformed-body" {
		t.Fatalf("problem %s", p)
	}
	if _, err := e.gw.Election(context.Background(), "framing"); err == nil {
		t.Error("a badly framed campaign created the election")
	}
	noErrorLogged(t, e)
}

func TestClientGoneMidBodyIsNotAServerError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{LogRequests: true})
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.WriteString(conn, "POST /v1/elections/gone/candidates HTTP/1.1\r\nHost: elector\r\nContent-Length: 1000\r\n\r\n{\"id\":")
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	eventually.True(t, 5*time.Second, "the request's log line", func() bool { return strings.Contains(e.log.String(), `"route":"/v1/elections/{election}/candidates"`) })
	if !strings.Contains(e.log.String(), `"status":400`) {
		t.Errorf("want status 400 in the log:\n%s", e.log.String())
	}
	noErrorLogged(t, e)
}

func TestClientGoneIsClientClosedRequest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequestWithContext(ctx, "PUT", "/v1/elections/x/candidates/a/heartbeat", nil)
	r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, chi.NewRouteContext()))
	tests := []struct {
		name   string
		err    error
		status int
	}{
		{"cancelled by the client", context.Canceled, statusClientClosedRequest},
		{"wrapped", errors.Join(errors.New("backend"), context.Canceled), statusClientClosedRequest},
		{"unexpected", errors.New("boom"), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		if p := problemFor(r, tt.err); p.Status != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, p.Status, tt.status)
		}
	}
	live := httptest.NewRequest("GET", "/", nil)
	live = live.WithContext(context.WithValue(live.Context(), chi.RouteCtxKey, chi.NewRouteContext()))
	if p := problemFor(live, context.Canceled); p.Status != http.StatusInternalServerError {
		t.Errorf("a cancellation while the client is still there: status %d, want 500", p.Status)
	}
}

// TestRequestsTheServerAnswersItselfAreDocumented keeps the list in
// openapi.yaml's description true: these never reach the router, and Go's
// HTTP server answers them as the document says.
func TestRequestsTheServerAnswersItselfAreDocumented(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, func(s *httptest.Server) { s.Config.MaxHeaderBytes = 64 << 10 })
	doc, err := spec()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, raw string
		status    int
		says      string
	}{
		{"invalid percent-escape in the path", "GET /v1/elections/%ZZ HTTP/1.1\r\nHost: e\r\n\r\n", 400, "/v1/elections/%ZZ"},
		{"negative Content-Length", "POST /v1/elections/x/candidates HTTP/1.1\r\nHost: e\r\nContent-Length: -5\r\n\r\n", 400, "`-5`"},
		{"headers over the limit", "GET /v1/elections HTTP/1.1\r\nHost: e\r\nX-Big: " + strings.Repeat("a", 70<<10) + "\r\n\r\n", 431, "headers over 64 KiB"},
		{"unknown Transfer-Encoding", "POST /v1/elections/x/candidates HTTP/1.1\r\nHost: e\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "→ 501"},
		{"unknown Expect", "POST /v1/elections/x/candidates HTTP/1.1\r\nHost: e\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}", 417, "→ 417"},
		{"HTTP/3.0", "GET /v1/elections HTTP/3.0\r\nHost: e\r\n\r\n", 505, "→ 505"},
	}
	desc := doc.Components.Schemas["Problem"].Value.Description
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.rawExchange(t, tt.raw)
			if res.StatusCode != tt.status {
				t.Errorf("status %d, want %d", res.StatusCode, tt.status)
			}
			if !strings.Contains(desc, tt.says) {
				t.Errorf("openapi.yaml's Problem schema does not mention %q", tt.says)
			}
		})
	}
}
