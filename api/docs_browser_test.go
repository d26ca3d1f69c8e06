package api

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// browserDir holds the node script that drives Chromium through /docs and
// its pinned playwright-core.
const browserDir = "testdata/docs-browser"

// TestDocsPageInBrowser opens /docs of a running gateway whose election has
// a leader in headless Chromium: every operation of the spec must be listed,
// "Try it out" must show the leader, and the page must ask nothing of any
// other host (testdata/docs-browser/docs-page.mjs checks all of it). It runs
// only when ELECTOR_BROWSER_TEST=1, as .ci/run sets it; it writes its
// screenshot to ELECTOR_DOCS_SCREENSHOT when set (scripts/docs-screenshot.sh
// regenerates docs/img/docs-page.png that way).
func TestDocsPageInBrowser(t *testing.T) {
	if os.Getenv("ELECTOR_BROWSER_TEST") != "1" {
		t.Skip("browser test skipped: it needs Chromium (apt-get install chromium) and node; " +
			"run it with scripts/docs-screenshot.sh, or: (cd api/testdata/docs-browser && npm ci) && " +
			"ELECTOR_BROWSER_TEST=1 go test -run TestDocsPageInBrowser ./api")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("ELECTOR_BROWSER_TEST=1 but node is not installed")
	}
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("playwright-core is not installed: run npm ci in api/%s", browserDir)
	}
	shot := os.Getenv("ELECTOR_DOCS_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "docs-page.png")
	}

	e := newEnv(t, Config{})
	e.campaign("billing", "node-a", "10m")
	e.campaign("billing", "node-b", "10m")
	if id, _ := e.leader("billing"); id != "node-a" {
		t.Fatalf("leader %q, want node-a", id)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "docs-page.mjs", e.srv.URL, "billing", "node-a", shot)
	cmd.Dir = browserDir
	out, err := cmd.CombinedOutput()
	t.Logf("docs-page.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the browser check failed: %v", err)
	}
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("no PNG screenshot at %s (%v)", shot, err)
	}
}
