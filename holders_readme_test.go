package elector_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/electorhq/elector/internal/servertest"
)

// TestREADMEHolders runs the README's holders block, as written, against a
// gateway on the embedded backend and compares what it prints with the
// output the README shows: two candidates hold with terms of their own,
// the third waits, and the leader read lists both holders.
func TestREADMEHolders(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is needed by the README's holders block and CI must install it", tool)
			}
			t.Skipf("%s not installed; the README's holders block needs bash, curl and jq", tool)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme: holders -->\n```sh\n(.*?)```\n\n```text\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no holders block followed by what it prints")
	}
	srv := servertest.Start(t, servertest.Embedded())
	out := runBash(t, strings.ReplaceAll(string(m[1]), "http://127.0.0.1:8080", srv.URL))
	if out != string(m[2]) {
		t.Fatalf("the holders block printed\n%s\nwant\n%s", out, m[2])
	}
}
