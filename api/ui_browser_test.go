package api

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// API tokens of the live view's browser test.
const (
	uiOperatorToken = "eat_ui_operator_7b2a"
	uiViewerToken   = "eat_ui_viewer_5e1d"
	uiSidecarToken  = "eat_ui_sidecar_31f9"
)

// TestUIPageInBrowser opens /ui of a gateway with API tokens in headless
// Chromium (testdata/docs-browser/ui-page.mjs): the page must ask for a
// token, list the elections, show billing's leader and candidates, show a
// campaign and a resignation made through the API while it is open without
// reloading, send a transfer for an operator and show the answer, resume
// its stream with Last-Event-ID after the connections are cut, offer no
// transfer to a token without the admin scope, ask for no token on a
// gateway without tokens, ask nothing of any other host and log no
// unexpected error. It runs only when ELECTOR_BROWSER_TEST=1, as .ci/run
// sets it; it writes its screenshot to ELECTOR_UI_SCREENSHOT when set
// (scripts/docs-screenshot.sh regenerates docs/img/ui.png that way).
func TestUIPageInBrowser(t *testing.T) {
	if os.Getenv("ELECTOR_BROWSER_TEST") != "1" {
		t.Skip("browser test skipped: it needs Chromium (apt-get install chromium) and node; " +
			"run it with scripts/docs-screenshot.sh, or: (cd api/testdata/docs-browser && npm ci) && " +
			"ELECTOR_BROWSER_TEST=1 go test -run TestUIPageInBrowser ./api")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("ELECTOR_BROWSER_TEST=1 but node is not installed")
	}
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("playwright-core is not installed: run npm ci in api/%s", browserDir)
	}
	shot := os.Getenv("ELECTOR_UI_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "ui.png")
	}

	e := newEnv(t, Config{Tokens: []Token{
		{Name: "operator", SHA256: HashAPIToken(uiOperatorToken), Scopes: []Scope{ScopeRead, ScopeAdmin}, Elections: []string{"*"}},
		{Name: "viewer", SHA256: HashAPIToken(uiViewerToken), Scopes: []Scope{ScopeRead}, Elections: []string{"*"}},
		{Name: "sidecar", SHA256: HashAPIToken(uiSidecarToken), Scopes: []Scope{ScopeCampaign}, Elections: []string{"*"}},
	}})
	campaign := func(election, id string, metadata map[string]any) string {
		t.Helper()
		r := e.do("POST", "/v1/elections/"+election+"/candidates",
			map[string]any{"id": id, "ttl": "2m", "metadata": metadata}, bearerHeader(uiSidecarToken))
		return r.expect(t, http.StatusCreated).json(t)["token"].(string)
	}
	nodeA := campaign("billing", "node-a", map[string]any{"addr": "10.0.0.7:8080", "zone": "a"})
	campaign("billing", "node-b", map[string]any{"addr": "10.0.0.8:8080", "zone": "b"})
	campaign("payroll", "worker-1", map[string]any{"addr": "10.0.1.4:9000"})

	// The script cuts every connection to the gateway through this, to see
	// the page resume its event stream.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.srv.CloseClientConnections()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer cut.Close()

	// A gateway without API tokens, where the page must ask for none.
	open := newEnv(t, Config{})
	open.campaign("billing", "node-a", "2m")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "ui-page.mjs", e.srv.URL,
		uiOperatorToken, uiViewerToken, uiSidecarToken, nodeA, cut.URL, open.srv.URL, shot)
	cmd.Dir = browserDir
	out, err := cmd.CombinedOutput()
	t.Logf("ui-page.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the browser check failed: %v", err)
	}
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("no PNG screenshot at %s (%v)", shot, err)
	}
}
