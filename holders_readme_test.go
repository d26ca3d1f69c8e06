package elector_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/electorhq/elector/internal/servertest"
)

// TestREADMEHolders runs the README's holders block: two candidates hold
// with terms of their own, the third waits, and the leader read lists both
// holders.
func TestREADMEHolders(t *testing.T) { runREADMEBlock(t, "holders") }

// TestREADMESessions runs the README's sessions block the same way: a
// session campaigns in two elections, its heartbeat lists both, and it
// closes.
func TestREADMESessions(t *testing.T) { runREADMEBlock(t, "sessions") }

// runREADMEBlock runs the README's block marked "<!-- readme: name -->",
// as written, against a gateway on the embedded backend, and compares
// what it prints with the text block that follows it.
func runREADMEBlock(t *testing.T, name string) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is needed by the README's %s block and CI must install it", tool, name)
			}
			t.Skipf("%s not installed; the README's %s block needs bash, curl and jq", tool, name)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme: " + regexp.QuoteMeta(name) + " -->\n```sh\n(.*?)```\n\n```text\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatalf("README.md has no %s block followed by what it prints", name)
	}
	srv := servertest.Start(t, servertest.Embedded())
	out := runBash(t, strings.ReplaceAll(string(m[1]), "http://127.0.0.1:8080", srv.URL))
	if out != string(m[2]) {
		t.Fatalf("the %s block printed\n%s\nwant\n%s", name, out, m[2])
	}
}
