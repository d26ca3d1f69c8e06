package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
)

// startServe runs `elector serve` in-process with JSON logs on a free
// loopback port and returns the base URL, the logs, and a function that
// sends the shutdown signal and returns the exit code.
func startServe(t *testing.T, extra ...string) (base string, logs *servertest.SyncBuffer, stop func() int) {
	t.Helper()
	isolate(t)
	logs = &servertest.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json"}, extra...)
	code := make(chan int, 1)
	go func() { code <- run(ctx, args, io.Discard, logs) }()
	stop = func() int {
		cancel()
		select {
		case c := <-code:
			return c
		case <-time.After(30 * time.Second):
			t.Fatalf("serve did not return after cancel; logs:\n%s", logs)
			return -1
		}
	}
	// The bound only ends a test whose gateway never starts: the loop
	// returns as soon as the start is logged. It is generous because the
	// embedded backend's first start can take seconds on a loaded machine.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if addr := startedAddr(logs.String()); addr != "" {
			return "http://" + addr, logs, stop
		}
		select {
		case c := <-code:
			t.Fatalf("serve exited with %d before starting; logs:\n%s", c, logs)
		case <-time.After(10 * time.Millisecond):
		}
	}
	stop()
	t.Fatalf("serve did not log its start; logs:\n%s", logs)
	return "", nil, nil
}

// startedAddr finds the listen address in the "elector started" line of
// JSON logs, or returns "".
func startedAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line struct{ Msg, Listen, Backend, Version string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "elector started" {
			return line.Listen
		}
	}
	return ""
}

// call sends one request and decodes a JSON answer into out (if not nil).
func call(t *testing.T, c *http.Client, method, url, body string, header http.Header, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, b)
		}
	}
	return resp.StatusCode
}

func TestServeEndToEndCampaignLeaderResignAndCleanShutdown(t *testing.T) {
	defer goleak.VerifyNone(t)
	base, logs, stop := startServe(t, "--http-shutdown-timeout", "20s")
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	election := base + "/v1/elections/e2e"

	if code := call(t, c, http.MethodGet, base+"/healthz", "", nil, nil); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	tokens := map[string]string{}
	for _, id := range []string{"node-a", "node-b"} {
		var got struct{ ID, State, Token string }
		if code := call(t, c, http.MethodPost, election+"/candidates", `{"id":"`+id+`"}`, nil, &got); code != http.StatusCreated {
			t.Fatalf("campaign %s: status %d", id, code)
		}
		if got.ID != id || got.Token == "" {
			t.Fatalf("campaign %s: got %+v", id, got)
		}
		tokens[id] = got.Token
	}

	var leader struct {
		ID   string
		Term uint64
	}
	if code := call(t, c, http.MethodGet, election+"/leader", "", nil, &leader); code != http.StatusOK || leader.ID != "node-a" || leader.Term == 0 {
		t.Fatalf("leader: status %d, %+v; want node-a with a term", code, leader)
	}
	first := leader.Term

	resign := http.Header{api.TokenHeader: {tokens["node-a"]}}
	if code := call(t, c, http.MethodDelete, election+"/candidates/node-a", "", resign, nil); code != http.StatusNoContent {
		t.Fatalf("resign: status %d", code)
	}
	if code := call(t, c, http.MethodGet, election+"/leader", "", nil, &leader); code != http.StatusOK || leader.ID != "node-b" || leader.Term <= first {
		t.Fatalf("leader after resign: status %d, %+v; want node-b with a term above %d", code, leader, first)
	}

	// An open event stream must not hold the shutdown up to its timeout.
	streamCtx, endStream := context.WithCancel(context.Background())
	defer endStream()
	req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, election+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("events: status %d", stream.StatusCode)
	}

	if code := stop(); code != 0 {
		t.Fatalf("exit code %d, want 0; logs:\n%s", code, logs)
	}
	if _, err := io.Copy(io.Discard, stream.Body); err != nil {
		t.Errorf("event stream did not end cleanly: %v", err)
	}
	out := logs.String()
	for _, want := range []string{`"msg":"elector started"`, `"backend":"embedded"`, `"version":"dev"`, `"msg":"shutting down"`, `"msg":"elector stopped"`,
		`"docs":"` + base + `/docs"`, `"ui":"` + base + `/ui"`,
		`"msg":"leadership begins","election":"e2e","candidate":"node-a"`,
		`"msg":"leadership ends","election":"e2e","candidate":"node-a","term":` + strconv.FormatUint(first, 10) + `,"reason":"resigned"`,
		`"msg":"leadership begins","election":"e2e","candidate":"node-b"`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s:\n%s", want, out)
		}
	}
	// No access log by default: not one line per request.
	if strings.Contains(out, `"msg":"request"`) {
		t.Errorf("requests were logged without log.requests:\n%s", out)
	}
	if strings.Contains(out, "cut off") {
		t.Errorf("shutdown waited for its timeout:\n%s", out)
	}
}

func TestServeExitsWithStatus1WhenTheAddressIsTaken(t *testing.T) {
	isolate(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stderr servertest.SyncBuffer
	code := run(context.Background(), []string{"serve", "--listen", ln.Addr().String()}, io.Discard, &stderr)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "listen on "+ln.Addr().String()) {
		t.Errorf("stderr does not name the address:\n%s", stderr.String())
	}
}

// TestServeSurvivesSIGHUPWithoutTLS: a SIGHUP, which operators send by
// habit to ask for a reload, must not kill a gateway that has no TLS
// certificate to reload.
func TestServeSurvivesSIGHUPWithoutTLS(t *testing.T) {
	base, logs, stop := startServe(t, "--backend-kind", "memory")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the SIGHUP to be taken", func() bool {
		return strings.Contains(logs.String(), "SIGHUP: no TLS certificate to reload")
	})
	c := &http.Client{Timeout: 5 * time.Second}
	if code := call(t, c, http.MethodGet, base+"/healthz", "", nil, nil); code != http.StatusOK {
		t.Fatalf("healthz after SIGHUP: %d", code)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d; logs:\n%s", code, logs)
	}
}

// TestServeLogsRequestsWhenAsked: log.requests turns the access log on.
func TestServeLogsRequestsWhenAsked(t *testing.T) {
	base, logs, stop := startServe(t, "--log-requests")
	c := &http.Client{Timeout: 10 * time.Second}
	if code := call(t, c, http.MethodGet, base+"/v1/elections", "", nil, nil); code != http.StatusOK {
		t.Fatalf("list: %d", code)
	}
	c.CloseIdleConnections()
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d; logs:\n%s", code, logs)
	}
	if !strings.Contains(logs.String(), `"msg":"request","method":"GET","route":"/v1/elections","status":200`) {
		t.Fatalf("no access log line:\n%s", logs)
	}
}
