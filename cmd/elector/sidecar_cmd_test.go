package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/internal/sidecar"
)

func TestSidecarRefusesHealthAndProxyFlagsThatCannotWork(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--health-command", "true", "--health-url", "http://127.0.0.1:1/"}, "exclude each other"},
		{[]string{"--health-command", "true", "--health-failures", "0"}, "--health-failures 0: want 1 or more"},
		{[]string{"--health-command", "true", "--ttl", "3s", "--health-timeout", "1s"}, "must be below the check interval, TTL/3 = 1s"},
		{[]string{"--health-url", "127.0.0.1:8080/healthz"}, "is not an http(s) URL"},
		{[]string{"--proxy-listen", "127.0.0.1:0"}, `this candidate may lead, but it registered no metadata, so no "addr"`},
		{[]string{"--proxy-listen", "127.0.0.1:0", "--metadata", `{"addr":"0.0.0.0:80"}`}, "unspecified host 0.0.0.0"},
		{[]string{"--proxy-listen", "127.0.0.1:0", "--metadata", `{"url":"http://10.0.0.7"}`, "--proxy-metadata-key", ""}, "--proxy-metadata-key must not be empty"},
		{[]string{"--proxy-listen", "127.0.0.1:0", "--console"}, "does not go with --console"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stderr servertest.SyncBuffer
			code := runSidecar(context.Background(), append([]string{"--gateway", "127.0.0.1:1", "--election", "e", "--id", "a"}, tt.args...), strings.NewReader(""), &stderr, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// statusAddr waits for the status server's address in logs.
func statusAddr(t *testing.T, logs *servertest.SyncBuffer) string {
	t.Helper()
	re := regexp.MustCompile(`status server listening" addr=(\S+)`)
	var addr string
	defer func() {
		if addr == "" {
			t.Logf("logs:\n%s", logs)
		}
	}()
	eventually.True(t, 5*time.Second, "the status server", func() bool {
		m := re.FindStringSubmatch(logs.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return "http://" + addr
}

func TestSidecarStatusListenOnATakenAddressFails(t *testing.T) {
	g := newTestGateway(t)
	logs, stop := inProcess(t, "--gateway", g.srv.URL, "--election", "e", "--id", "a", "--status-listen", "127.0.0.1:0")
	taken := strings.TrimPrefix(statusAddr(t, logs), "http://")
	var stderr strings.Builder
	code := runSidecar(context.Background(), []string{"--gateway", g.srv.URL, "--election", "e", "--id", "b", "--status-listen", taken},
		strings.NewReader(""), io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "--status-listen") {
		t.Fatalf("exit code %d, stderr %q; want 1 naming --status-listen", code, stderr.String())
	}
	// The status server stops with elector run.
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d; logs:\n%s", code, logs)
	}
	if _, err := http.Get("http://" + taken + "/healthz"); err == nil {
		t.Error("the status server still answers after elector run stopped")
	}
}

func TestRunHelpShowsOneDefaultForID(t *testing.T) {
	var stderr strings.Builder
	if code := runSidecar(context.Background(), []string{"--help"}, strings.NewReader(""), io.Discard, &stderr); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for line := range strings.SplitSeq(stderr.String(), "\n") {
		if strings.Contains(line, "--id ") {
			if n := strings.Count(line, "default"); n != 1 {
				t.Fatalf("--id shows %d defaults: %q", n, line)
			}
			return
		}
	}
	t.Fatalf("no --id in the help:\n%s", stderr.String())
}

func TestSidecarTriesGatewaysInTurn(t *testing.T) {
	g := newTestGateway(t)
	dead := "http://127.0.0.1:" + freePort(t) // the first gateway is not there
	log := filepath.Join(t.TempDir(), "log")
	logs, stop := inProcess(t, append([]string{"--gateway", dead + ", " + g.srv.URL, "--election", "e", "--id", "a", "--ttl", "3s"}, hookArgs(log)...)...)
	eventually.True(t, 5*time.Second, "the begin command", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	if !strings.Contains(logs.String(), "switched gateway") {
		t.Errorf("logs do not say which gateway answered:\n%s", logs)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d; logs:\n%s", code, logs)
	}
}

// TestRunFlagsMapOntoTheSidecarConfig: every flag of elector run reaches
// its field of sidecar.Config, the gateways as URLs.
func TestRunFlagsMapOntoTheSidecarConfig(t *testing.T) {
	isolateClient(t)
	c := &sidecarConfig{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	fs := newRunFlags(io.Discard, c)
	err := fs.Parse([]string{"--gateway", "127.0.0.1:1, http://b:2", "--election", "e", "--id", "x", "--ttl", "6s",
		"--priority", "3", "--metadata", `{"addr":"h:1"}`, "--leader-begin-command", "B", "--leader-end-command", "E",
		"--error-command", "R", "--error-timeout", "0", "--end-retries", "4", "--end-retry-interval", "1s",
		"--command-timeout", "2s", "--child-grace", "3s", "--health-url", "http://h/", "--health-failures", "5",
		"--health-timeout", "1s", "--", "prog", "arg"})
	if err != nil {
		t.Fatal(err)
	}
	c.childArgv = fs.Args()
	c.resolve(fs)
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	got := c.engineConfig(nil)
	if len(got.ClientOptions) == 0 {
		t.Error("no client options")
	}
	got.ClientOptions, got.Stdin, got.Stdout, got.Stderr = nil, nil, nil, nil
	want := sidecar.Config{
		Gateways: []string{"http://127.0.0.1:1", "http://b:2"}, Election: "e", ID: "x", TTL: 6 * time.Second,
		Priority: 3, Metadata: json.RawMessage(`{"addr":"h:1"}`), Begin: "B", End: "E", OnError: "R",
		EndRetries: 4, EndRetryInterval: time.Second, CommandTimeout: 2 * time.Second,
		Command: []string{"prog", "arg"}, ChildGrace: 3 * time.Second, HealthURL: "http://h/",
		HealthFailures: 5, HealthTimeout: time.Second, UserAgent: "elector-run/" + version,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sidecar.Config\n%+v\nwant\n%+v", got, want)
	}
}

// TestRunExitsWithStatus1WhenTheEndCommandFailsEveryAttempt: the host may
// still act as leader, and elector run says so with its exit status.
func TestRunExitsWithStatus1WhenTheEndCommandFailsEveryAttempt(t *testing.T) {
	var out servertest.SyncBuffer
	args := []string{"--console", "--id", "me", "--leader-end-command", "exit 1", "--end-retries", "1", "--end-retry-interval", "1ms"}
	if code := runSidecar(context.Background(), args, strings.NewReader("LEADER\n"), &out, &out); code != 1 {
		t.Fatalf("exit code %d, want 1; output:\n%s", code, &out)
	}
	if !strings.Contains(out.String(), "failed on every attempt") {
		t.Errorf("the output does not say why:\n%s", &out)
	}
}
