package ui

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestModulesInNode runs testdata/modules.test.mjs under node's test
// runner: the event-stream parser (line endings split between reads,
// resuming ids, retry hints) and the model of an election that events
// change. It needs node; without it, it is skipped, unless
// ELECTOR_BROWSER_TEST=1 (as .ci/run sets it once node is installed).
func TestModulesInNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("ELECTOR_BROWSER_TEST") == "1" {
			t.Fatal("ELECTOR_BROWSER_TEST=1 but node is not installed")
		}
		t.Skip("node is not installed; the page's modules are tested with node --test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "--test", "testdata/modules.test.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test testdata/modules.test.mjs: %v\n%s", err, out)
	}
}
