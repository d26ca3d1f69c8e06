package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/internal/servertest"
)

// TestHelpAndUsageErrors runs the command table as a newcomer would: help
// for a command, --help of every command, and the mistakes of a first hour
// (a typo, a stray argument, a flag in the wrong place), each answered
// briefly with the fix.
func TestHelpAndUsageErrors(t *testing.T) {
	tests := []struct {
		args           []string
		code           int
		stdout, stderr string // substrings; "" checks nothing
		notStderr      string
	}{
		{args: []string{"help", "leader"}, code: 0, stdout: "Usage: elector leader --election E"},
		{args: []string{"help", "token"}, code: 0, stdout: "Usage: elector token new | hash"},
		{args: []string{"help", "leadr"}, code: 2, stderr: `unknown command "leadr"; did you mean "leader"?`},
		{args: []string{"help", "a", "b"}, code: 2, stderr: "want one command"},
		{args: []string{"leadr"}, code: 2, stderr: "elector: unknown command \"leadr\"; did you mean \"leader\"?\nRun 'elector help' for the list of commands.\n", notStderr: "Usage:"},
		{args: []string{"bogus"}, code: 2, stderr: `unknown command "bogus"` + "\n", notStderr: "did you mean"},
		{args: []string{"--gateway", "x", "leader"}, code: 2, stderr: "flags go after the command"},
		{args: []string{"token", "--help"}, code: 0, stderr: "Usage: elector token new | hash"},
		{args: []string{"token", "new", "--help"}, code: 0, stderr: "Usage: elector token new | hash"},
		{args: []string{"token", "bogus"}, code: 2, stderr: "Usage: elector token new | hash"},
		{args: []string{"healthcheck", "--help"}, code: 0, stderr: "Usage: elector healthcheck [--url URL]", notStderr: "Usage of"},
		{args: []string{"healthcheck", "127.0.0.1:8080"}, code: 2, stderr: "did you mean --url 127.0.0.1:8080?"},
		{args: []string{"version", "--bogus"}, code: 2, stderr: "elector version: unknown flag: --bogus"},
		{args: []string{"version", "now"}, code: 2, stderr: `unexpected argument "now"`},
		{args: []string{"version", "--help"}, code: 0, stderr: "Usage: elector version"},
		{args: []string{"completion", "--help"}, code: 0, stderr: "Usage: elector completion bash|zsh|fish"},
		{args: []string{"campaign", "--help"}, code: 0, stderr: "the candidate's id (default the host name)\n"},
		{args: []string{"leader", "--help"}, code: 0, stderr: `(default "http://127.0.0.1:8080")`},
		{args: []string{"bench", "--help"}, code: 0, stderr: "--keep-elections"},
		{args: []string{"proxy", "--help"}, code: 0, stderr: "Usage: elector proxy --election E --listen ADDR [flags]"},
		{args: []string{"help", "proxy"}, code: 0, stdout: "--metadata-key"},
		{args: []string{"run", "--help"}, code: 0, stderr: "--health-failures int"},
		{args: []string{"leader", "billing"}, code: 2, stderr: `elector leader: unexpected argument "billing"; did you mean --election billing?`},
		{args: []string{"transfer", "--election", "e", "node-b"}, code: 2, stderr: "did you mean --to node-b?"},
		{args: []string{"heartbeat", "--election", "e", "node-a"}, code: 2, stderr: "did you mean --id node-a?"},
		{args: []string{"transfer", "--election", "e", "--to", "b", "--cancel"}, code: 2, stderr: "--to and --cancel exclude each other"},
		{args: []string{"leader", "--election", "e", "--gateway", "ftp://x"}, code: 2, stderr: "is not an http(s) URL or a host:port"},
		{args: []string{"bench", "--gateway", "ftp://x", "-d", "1s"}, code: 2, stderr: "elector bench: ", notStderr: "bench: bench:"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			isolateClient(t)
			code, stdout, stderr := cli(t, tt.args...)
			if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) ||
				(tt.notStderr != "" && strings.Contains(stderr, tt.notStderr)) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q and without %q",
					code, stdout, stderr, tt.code, tt.stdout, tt.stderr, tt.notStderr)
			}
		})
	}
}

// isolateClient clears the environment the gateway clients read.
func isolateClient(t *testing.T) {
	t.Helper()
	for _, v := range []string{envGateway, envAPIToken, envToken} {
		t.Setenv(v, "")
	}
}

// TestEveryCommandHelpsWithoutDoubledDefaultsOrSecrets: --help of every
// command exits 0, says each default once, and never prints a token the
// environment holds.
func TestEveryCommandHelpsWithoutDoubledDefaultsOrSecrets(t *testing.T) {
	t.Setenv(envAPIToken, "eat_secret_api_token")
	t.Setenv(envToken, "secret_candidate_token")
	t.Setenv(envGateway, "")
	host, _ := os.Hostname()
	for _, c := range visibleCommands() {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, c.name, "--help")
			help := stdout + stderr
			want := "Usage: elector " + c.name
			if c.name == "help" {
				want = "Usage:\n  elector serve" // the list of commands
			}
			if code != 0 || !strings.Contains(help, want) {
				t.Fatalf("exit %d, help %q; want 0 and a usage line", code, help)
			}
			for _, line := range strings.Split(help, "\n") {
				if strings.Count(line, "(default") > 1 {
					t.Errorf("a doubled default: %q", line)
				}
			}
			for _, secret := range []string{"eat_secret_api_token", "secret_candidate_token"} {
				if strings.Contains(help, secret) {
					t.Errorf("the help prints a token from the environment: %q", help)
				}
			}
			if host != "" && strings.Contains(help, `(default "`+host+`")`) {
				t.Errorf("the help names this host as a default: %q", help)
			}
		})
	}
}

// TestClientCommandsTakeHostPortAndTranslateAdvice: --gateway takes a
// host:port; a refused transfer names the command that lists followers,
// and a missing API token names --api-token; no message says "elector:"
// twice.
func TestClientCommandsTakeHostPortAndTranslateAdvice(t *testing.T) {
	isolateClient(t)
	g := newTestGateway(t)
	hostPort := strings.TrimPrefix(g.srv.URL, "http://")
	if code, out, errOut := cli(t, "campaign", "--gateway", hostPort, "--election", "e", "--id", "a"); code != 0 || !strings.Contains(out, "a in e: leader") {
		t.Fatalf("campaign at %s: %d %q %q", hostPort, code, out, errOut)
	}
	code, _, errOut := cli(t, "transfer", "--gateway", hostPort, "--election", "e", "--to", "a")
	if code != 1 || !strings.Contains(errOut, "name a follower from elector candidates --election e") || strings.Contains(errOut, "/v1/") ||
		strings.HasPrefix(errOut, "elector transfer: elector:") {
		t.Fatalf("transfer to the leader: %d %q", code, errOut)
	}
	code, _, errOut = cli(t, "transfer", "--gateway", hostPort, "--election", "e", "--cancel")
	if code != 1 || !strings.Contains(errOut, "no leadership transfer to cancel") {
		t.Fatalf("cancel with none pending: %d %q", code, errOut)
	}

	// A gateway with API tokens: the 401 advice names the flag.
	srv := servertest.Start(t, servertest.Tokens(api.Token{Name: "ops", SHA256: api.HashAPIToken("eat_x"), Scopes: []api.Scope{api.ScopeRead}, Elections: []string{"*"}}))
	code, _, errOut = cli(t, "leader", "--gateway", srv.URL, "--election", "e")
	if code != 1 || !strings.Contains(errOut, "pass it with --api-token (or $ELECTOR_API_TOKEN)") || strings.Contains(errOut, "Authorization: Bearer") ||
		!strings.HasPrefix(errOut, "elector leader: Unauthenticated (401)") {
		t.Fatalf("leader without an API token: %d %q", code, errOut)
	}
}

// TestTransferCommandCancels: elector transfer --cancel drops a pending
// transfer, and the leader goes on leading.
func TestTransferCommandCancels(t *testing.T) {
	isolateClient(t)
	g := newTestGateway(t)
	t.Setenv(envGateway, g.srv.URL)
	for _, id := range []string{"a", "b"} {
		if code, _, errOut := cli(t, "campaign", "--election", "e", "--id", id, "--ttl", "1m"); code != 0 {
			t.Fatalf("campaign %s: %s", id, errOut)
		}
	}
	if code, out, errOut := cli(t, "transfer", "--election", "e", "--to", "b"); code != 0 || !strings.Contains(out, "elector transfer --election e --cancel cancels it") {
		t.Fatalf("transfer: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := cli(t, "transfer", "--election", "e", "--cancel"); code != 0 || out != "transfer in e cancelled: a (term 1) goes on leading\n" {
		t.Fatalf("transfer --cancel: %d %q %q", code, out, errOut)
	}
	if e, err := g.c.Election(context.Background(), "e"); err != nil || e.Transfer != nil || e.Leader == nil || e.Leader.ID != "a" {
		t.Fatalf("election after the cancellation: %+v, %v", e, err)
	}
}
