package api

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestRootLeadsToDocsAndHeadDocsWorks: GET and HEAD / redirect to /docs,
// and HEAD /docs answers the page's headers without the page; the answers
// match openapi.yaml.
func TestRootLeadsToDocsAndHeadDocsWorks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := *e.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	send := func(method, path string) response {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		r := response{Status: res.StatusCode, Header: res.Header, Body: b}
		validate(t, req, r, false)
		return r
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r := send(method, "/")
		if r.Status != http.StatusFound || r.Header.Get("Location") != "/docs" {
			t.Errorf("%s /: %d to %q; want 302 to /docs", method, r.Status, r.Header.Get("Location"))
		}
	}
	r := send(http.MethodHead, "/docs")
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "text/html; charset=utf-8" || len(r.Body) != 0 {
		t.Errorf("HEAD /docs: %d %q with %d bytes; want 200 text/html without a body", r.Status, r.Header.Get("Content-Type"), len(r.Body))
	}
}
