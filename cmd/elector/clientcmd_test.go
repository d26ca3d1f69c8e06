package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
)

// cli runs one client command in-process and returns its exit code and
// output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr servertest.SyncBuffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestClientCommandsCampaignHeartbeatLeaderCandidatesResign(t *testing.T) {
	g := newTestGateway(t)
	t.Setenv(envGateway, g.srv.URL)
	code, out, errOut := cli(t, "campaign", "--election", "e", "--id", "a", "--ttl", "1m", "--metadata", `{"addr":"x"}`, "--output", "json")
	if code != 0 {
		t.Fatalf("campaign: %d %s", code, errOut)
	}
	var st struct{ ID, State, Token string }
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Token == "" || st.State != "leader" {
		t.Fatalf("campaign json %q: %v", out, err)
	}
	if code, out, _ := cli(t, "campaign", "--election", "e", "--id", "b"); code != 0 || !strings.Contains(out, "b in e: follower, position 1, leader a") || !strings.Contains(out, "token: ") {
		t.Fatalf("campaign text: %d %q", code, out)
	}
	if code, out, _ := cli(t, "heartbeat", "--election", "e", "--id", "a", "--token", st.Token); code != 0 || !strings.HasPrefix(out, "a in e: leader, position 0") {
		t.Fatalf("heartbeat: %d %q", code, out)
	}
	if code, out, _ := cli(t, "leader", "--election", "e"); code != 0 || !strings.HasPrefix(out, "a (term 1, since ") {
		t.Fatalf("leader: %d %q", code, out)
	}
	if code, out, _ := cli(t, "candidates", "--election", "e"); code != 0 || !strings.Contains(out, "POSITION") || !strings.Contains(out, "1         b   follower") {
		t.Fatalf("candidates: %d %q", code, out)
	}
	if code, _, errOut := cli(t, "heartbeat", "--election", "e", "--id", "a", "--token", "wrong"); code != 1 || !strings.Contains(errOut, "token does not match") {
		t.Fatalf("heartbeat with a wrong token: %d %q", code, errOut)
	}
	t.Setenv(envToken, st.Token)
	if code, out, _ := cli(t, "resign", "--election", "e", "--id", "a", "-o", "json"); code != 0 || !strings.Contains(out, `"resigned":true`) {
		t.Fatalf("resign: %d %q", code, out)
	}
	if code, out, _ := cli(t, "leader", "--election", "e", "-o", "json"); code != 0 || !strings.Contains(out, `"id":"b"`) {
		t.Fatalf("leader after resign: %d %q", code, out)
	}
	if code, _, errOut := cli(t, "leader", "--election", "nothing-here"); code != 1 || errOut == "" {
		t.Fatalf("leader of no election: %d %q", code, errOut)
	}
	if code, _, errOut := cli(t, "heartbeat", "--election", "e"); code != 2 || !strings.Contains(errOut, "--id is required") {
		t.Fatalf("heartbeat without id: %d %q", code, errOut)
	}
}

// --local asks leader and candidates for local reads, which print what
// the reads without it print.
func TestReadCommandsAskForLocalReadsWithLocal(t *testing.T) {
	g := newTestGateway(t)
	target, err := url.Parse(g.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var queries []string
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	t.Setenv(envGateway, proxy.URL)
	if code, _, errOut := cli(t, "campaign", "--election", "e", "--id", "a"); code != 0 {
		t.Fatalf("campaign: %d %s", code, errOut)
	}
	for _, cmd := range []string{"leader", "candidates"} {
		mu.Lock()
		queries = nil
		mu.Unlock()
		code, lin, _ := cli(t, cmd, "--election", "e")
		lcode, loc, _ := cli(t, cmd, "--election", "e", "--local")
		mu.Lock()
		got := slices.Clone(queries)
		mu.Unlock()
		if code != 0 || lcode != 0 || lin != loc {
			t.Fatalf("%s: %d %q; with --local %d %q", cmd, code, lin, lcode, loc)
		}
		if !slices.Equal(got, []string{"", "consistency=local"}) {
			t.Fatalf("%s, then %s --local: queries %q, want none, then consistency=local", cmd, cmd, got)
		}
	}
}

func TestWatchCommandPrintsOneLinePerEvent(t *testing.T) {
	g := newTestGateway(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut servertest.SyncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"watch", "--gateway", g.srv.URL, "--election", "e"}, &out, &errOut) }()
	// Every stream opens with a reset, even of an election not created yet.
	eventually.True(t, 5*time.Second, "the reset line", func() bool { return strings.Contains(out.String(), " reset ") })
	_, token, err := g.c.Campaign(ctx, "e", campaignReq("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.c.Resign(ctx, "e", "a", token); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "five event lines", func() bool { return strings.Count(out.String(), "\n") >= 5 })
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("watch exit %d: %s", code, &errOut)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.Contains(lines[0], "reset") || !strings.Contains(lines[0], "election=e") {
		t.Errorf("line 0 %q, want the reset of e", lines[0])
	}
	lines = lines[1:]
	for i, want := range []string{"candidate.joined", "leader.begin", "leader.end", "candidate.left"} {
		if !strings.Contains(lines[i], want) || !strings.Contains(lines[i], "candidate=a") || !strings.Contains(lines[i], " id=") {
			t.Errorf("line %d %q, want %s of a with an id", i, lines[i], want)
		}
	}
}
