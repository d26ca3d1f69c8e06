package api

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/electorhq/elector/api/ui"
)

func TestUIPageIsServedWithItsAssets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	r := e.do("GET", "/ui", nil).expect(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	csp := r.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self';", "connect-src 'self';", "style-src 'self';"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy %q allows something unsafe", csp)
	}
	for _, ref := range []string{`src="ui/ui.mjs"`, `href="ui/ui.css"`, `href="ui/icon.svg"`} {
		if !bytes.Contains(r.Body, []byte(ref)) {
			t.Errorf("the page lacks %s", ref)
		}
	}
	for _, name := range ui.Names() {
		r := e.do("GET", "/ui/"+name, nil).expect(t, http.StatusOK)
		want, ct, err := ui.Asset(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Body, want) || r.Header.Get("Content-Type") != ct {
			t.Errorf("%s: served %d bytes as %q, want %d bytes as %q", name, len(r.Body), r.Header.Get("Content-Type"), len(want), ct)
		}
		if r.Header.Get("Content-Security-Policy") != csp {
			t.Errorf("%s: Content-Security-Policy %q, want the page's", name, r.Header.Get("Content-Security-Policy"))
		}
	}
}

func TestUIAssetUnknownIsAProblem(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	for _, name := range []string{"index.html", "doc.go", "..%2Fui.go", "swagger-ui.css"} {
		r := e.do("GET", "/ui/"+name, nil).expect(t, http.StatusNotFound)
		if got := r.problemType(t); got != "not-found" {
			t.Errorf("%s: problem %q", name, got)
		}
	}
}

// TestUIPageIsOpenBehindTokens: a browser opening /ui cannot send a token,
// so the page and its assets are served without one even when
// ProtectOperational puts /docs behind the read scope; the data the page
// shows still needs a token.
func TestUIPageIsOpenBehindTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Tokens: authTokens(), ProtectOperational: true})
	e.do("GET", "/docs", nil).expect(t, http.StatusUnauthorized)
	e.do("GET", "/ui", nil).expect(t, http.StatusOK)
	e.do("GET", "/ui/ui.mjs", nil).expect(t, http.StatusOK)
	e.do("GET", "/v1/elections", nil).expect(t, http.StatusUnauthorized)
}
