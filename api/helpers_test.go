package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/electorhq/elector"
	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/webhooks"
)

// spec is openapi.yaml, loaded and validated once for all tests. It also
// teaches the response validator the media types of /docs and /ui (kin-openapi
// knows only text/plain among text types).
var spec = sync.OnceValues(func() (*openapi3.T, error) {
	for _, ct := range []string{"text/html", "text/javascript", "text/css", "image/svg+xml"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	openapi3filter.RegisterBodyDecoder("image/png", openapi3filter.FileBodyDecoder)
	doc, err := openapi3.NewLoader().LoadFromData(elector.OpenAPI)
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background())
})

var specRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := spec()
	if err != nil {
		return nil, err
	}
	return gorillamux.NewRouter(doc)
})

// env is one gateway over a fresh memory backend, served over real HTTP.
type env struct {
	t   testing.TB
	srv *httptest.Server
	gw  *gateway.Gateway
	log *syncBuffer
}

// newEnv starts a memory backend with its Run loop, a gateway and the API
// under httptest; everything stops at the end of the test.
func newEnv(t testing.TB, cfg Config, configure ...func(*httptest.Server)) *env {
	t.Helper()
	b := memory.New()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gw := gateway.New(b, gateway.Config{Logger: logger})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Run(ctx) // the backend's loop and the event hub
	}()
	if cfg.Webhooks == nil {
		// Webhooks are managed but not delivered (nobody runs the service):
		// tests that need deliveries run one themselves.
		cfg.Webhooks = webhooks.New(gw, b, webhooks.Config{AllowPrivateNetworks: true, Logger: logger})
	}
	if cfg.Logger == nil {
		cfg.Logger = logger
	}
	srv := httptest.NewUnstartedServer(New(gw, cfg))
	for _, c := range configure {
		c(srv)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		<-done
	})
	return &env{t: t, srv: srv, gw: gw, log: logs}
}

// response is one answer of the API, already validated against the spec.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// header is one request header for do.
type header struct{ key, value string }

// token is the candidate token header.
func token(tok string) header { return header{TokenHeader, tok} }

// contentType overrides the request's Content-Type.
func contentType(ct string) header { return header{"Content-Type", ct} }

// do sends one request and validates the response against openapi.yaml.
// body is sent as is when it is a string or []byte, else as its JSON.
func (e *env) do(method, path string, body any, headers ...header) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatalf("encoding the request body: %v", err)
		}
		rd = bytes.NewReader(j)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		req.Header.Set(h.key, h.value)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading the response: %v", method, path, err)
	}
	r := response{Status: res.StatusCode, Header: res.Header, Body: b}
	validate(e.t, req, r, false)
	return r
}

// validate checks a response against openapi.yaml: its status must be
// documented for the operation, its headers and body must match. Requests
// the spec has no route for (404 not-found, 405) must answer a Problem.
// Streams are checked without their (endless) body.
func validate(t testing.TB, req *http.Request, r response, stream bool) {
	t.Helper()
	doc, err := spec()
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	router, err := specRouter()
	if err != nil {
		t.Fatalf("openapi.yaml router: %v", err)
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		if r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed {
			t.Fatalf("%s %s: no route in openapi.yaml (%v) but status %d", req.Method, req.URL.Path, err, r.Status)
		}
		checkProblemSchema(t, doc, req, r)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 r.Status,
		Header:                 r.Header,
		Body:                   io.NopCloser(bytes.NewReader(r.Body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: stream, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Fatalf("%s %s: response %d does not match openapi.yaml: %v\nbody: %s", req.Method, req.URL.Path, r.Status, err, r.Body)
	}
	if r.Status >= 400 && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("%s %s: error %d is %q, not a problem", req.Method, req.URL.Path, r.Status, r.Header.Get("Content-Type"))
	}
}

// checkProblemSchema validates a response the spec has no route for against
// the Problem schema.
func checkProblemSchema(t testing.TB, doc *openapi3.T, req *http.Request, r response) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("%s %s: %d answered with %q, not a problem", req.Method, req.URL.Path, r.Status, ct)
	}
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("%s %s: problem is not JSON: %v", req.Method, req.URL.Path, err)
	}
	if err := doc.Components.Schemas["Problem"].Value.VisitJSON(v); err != nil {
		t.Fatalf("%s %s: problem does not match the Problem schema: %v\n%s", req.Method, req.URL.Path, err, r.Body)
	}
}

// decode reads a response body into a generic JSON object.
func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response body is not a JSON object: %v\n%s", err, r.Body)
	}
	return m
}

// problemType is the slug of a problem response.
func (r response) problemType(t testing.TB) string {
	t.Helper()
	return strings.TrimPrefix(r.json(t)["type"].(string), ProblemTypePrefix)
}

// expect fails the test unless the response has status want.
func (r response) expect(t testing.TB, want int) response {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d\n%s", r.Status, want, r.Body)
	}
	return r
}

// campaign campaigns id into election with a TTL and returns its token.
func (e *env) campaign(election, id, ttl string) string {
	e.t.Helper()
	r := e.do("POST", "/v1/elections/"+election+"/candidates", map[string]any{"id": id, "ttl": ttl}).expect(e.t, http.StatusCreated)
	return r.json(e.t)["token"].(string)
}

// following waits until the gateway's Run follows the backend for good:
// its hub watches the backend and the transition log reads the hub, so a
// leadership begun now is logged. Run starts these long-lived goroutines
// on its own schedule; a test that compares goroutines waits for them
// first. A leadership in a warm-up election is made again until one is
// logged.
func (e *env) following() {
	e.t.Helper()
	tok := ""
	eventually.True(e.t, 5*time.Second, "the gateway following the backend", func() bool {
		if tok != "" {
			e.do("DELETE", "/v1/elections/following/candidates/w", nil, token(tok)).expect(e.t, http.StatusNoContent)
		}
		tok = e.campaign("following", "w", "1h")
		return strings.Contains(e.log.String(), `"msg":"leadership begins","election":"following"`)
	})
}

// leader returns the id and term of an election's leader.
func (e *env) leader(election string) (string, float64) {
	e.t.Helper()
	m := e.do("GET", "/v1/elections/"+election+"/leader", nil).expect(e.t, http.StatusOK).json(e.t)
	return m["id"].(string), m["term"].(float64)
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
