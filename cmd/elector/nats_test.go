package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/internal/testnet"

	"github.com/electorhq/elector/api"
)

// campaignVia campaigns id in election through the gateway at base and
// returns its token and term.
func campaignVia(t *testing.T, c *http.Client, base, election, id, ttl string) (string, uint64) {
	t.Helper()
	var got struct {
		Token string
		Term  uint64
		State string
	}
	body := fmt.Sprintf(`{"id":%q,"ttl":%q}`, id, ttl)
	if code := call(t, c, http.MethodPost, base+"/v1/elections/"+election+"/candidates", body, nil, &got); code != http.StatusCreated {
		t.Fatalf("campaign %s via %s: status %d", id, base, code)
	}
	return got.Token, got.Term
}

type leaderAnswer struct {
	ID   string
	Term uint64
}

func leaderVia(t *testing.T, c *http.Client, base, election string) (leaderAnswer, int) {
	t.Helper()
	var l leaderAnswer
	code := call(t, c, http.MethodGet, base+"/v1/elections/"+election+"/leader", "", nil, &l)
	return l, code
}

// TestEmbeddedRestartKeepsLeaderAndTerm restarts `elector serve` on the same
// data directory: the leader that keeps heartbeating is still the leader,
// with the same term, and its token still works.
func TestEmbeddedRestartKeepsLeaderAndTerm(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	c := &http.Client{Timeout: 10 * time.Second}
	base, logs, stop := startServe(t, "--embedded-data-dir", dir)
	token, term := campaignVia(t, c, base, "restart", "node-a", "1m")
	campaignVia(t, c, base, "restart", "node-b", "1m")
	if code := stop(); code != 0 {
		t.Fatalf("first serve exited %d; logs:\n%s", code, logs)
	}

	base, logs, stop = startServe(t, "--embedded-data-dir", dir)
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("second serve exited %d; logs:\n%s", code, logs)
		}
	}()
	var st struct {
		State string
		Term  uint64
	}
	hdr := http.Header{api.TokenHeader: {token}}
	if code := call(t, c, http.MethodPut, base+"/v1/elections/restart/candidates/node-a/heartbeat", "", hdr, &st); code != http.StatusOK {
		t.Fatalf("heartbeat after restart: status %d", code)
	}
	if st.State != "leader" || st.Term != term {
		t.Fatalf("after restart node-a is %s in term %d; want leader in term %d", st.State, st.Term, term)
	}
	if l, code := leaderVia(t, c, base, "restart"); code != http.StatusOK || l.ID != "node-a" || l.Term != term {
		t.Fatalf("leader after restart: %d %+v", code, l)
	}
}

// sseReader reads `id:` and `event:` pairs from an event stream.
type sseReader struct {
	resp   *http.Response
	mu     sync.Mutex
	events []string // "id event"
	done   chan struct{}
}

func openStream(t *testing.T, c *http.Client, url string) *sseReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("open %s: %v %v", url, err, resp)
	}
	r := &sseReader{resp: resp, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(resp.Body)
		id := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				r.mu.Lock()
				r.events = append(r.events, id+" "+strings.TrimPrefix(line, "event: "))
				r.mu.Unlock()
				id = ""
			}
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-r.done })
	return r
}

func (r *sseReader) waitFor(t *testing.T, suffix string) string {
	t.Helper()
	// Generous: after a member is lost, the stream's consumer may wait
	// for JetStream to elect a new leader (4 to 9 s idle, more on a
	// loaded machine) before the event comes.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, e := range r.events {
			if strings.HasSuffix(e, " "+suffix) {
				r.mu.Unlock()
				return e
			}
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Fatalf("no %s event; got %v", suffix, r.events)
	return ""
}

// TestTwoReplicasOnOneNATSAgree runs one gateway on the embedded backend with
// a NATS listener and a second with backend.kind nats against it: they agree
// on the leader, and a campaign through one reaches the other's event stream
// with the same event id.
func TestTwoReplicasOnOneNATSAgree(t *testing.T) {
	natsAddr := testnet.FreeAddr(t)
	c := &http.Client{Timeout: 10 * time.Second}
	one, _, stop1 := startServe(t, "--embedded-data-dir", filepath.Join(t.TempDir(), "one"), "--embedded-listen", natsAddr)
	defer stop1()
	two, _, stop2 := startServe(t, "--backend-kind", "nats", "--nats-urls", "nats://"+natsAddr)
	defer stop2()

	s1 := openStream(t, c, one+"/v1/events")
	s2 := openStream(t, c, two+"/v1/events")
	token, term := campaignVia(t, c, one, "shared", "node-a", "1m")
	e1, e2 := s1.waitFor(t, "leader.begin"), s2.waitFor(t, "leader.begin")
	if e1 != e2 || strings.HasPrefix(e1, " ") {
		t.Fatalf("replica one saw %q, replica two %q; want one event id", e1, e2)
	}
	for _, base := range []string{one, two} {
		if l, code := leaderVia(t, c, base, "shared"); code != http.StatusOK || l.ID != "node-a" || l.Term != term {
			t.Fatalf("leader via %s: %d %+v", base, code, l)
		}
	}
	// A heartbeat through the other replica works with the same token.
	var st struct{ State string }
	if code := call(t, c, http.MethodPut, two+"/v1/elections/shared/candidates/node-a/heartbeat", "", http.Header{api.TokenHeader: {token}}, &st); code != http.StatusOK || st.State != "leader" {
		t.Fatalf("heartbeat via replica two: %d %+v", code, st)
	}
}

// TestEmbeddedClusterSurvivesOneMember starts three `elector serve` processes
// whose embedded servers form one JetStream cluster, stops one, and checks
// that campaign, heartbeat, leader and events go on through the other two.
func TestEmbeddedClusterSurvivesOneMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-member cluster")
	}
	isolate(t)
	routes := []string{testnet.FreeAddr(t), testnet.FreeAddr(t), testnet.FreeAddr(t)}
	type member struct {
		base string
		logs *servertest.SyncBuffer
		stop func() int
	}
	members := make([]member, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		var others []string
		for j, r := range routes {
			if j != i {
				others = append(others, r)
			}
		}
		args := []string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json",
			"--embedded-data-dir", filepath.Join(t.TempDir(), fmt.Sprint(i)),
			"--embedded-server-name", fmt.Sprintf("elector-%d", i+1),
			"--embedded-cluster-listen", routes[i],
			"--embedded-routes", strings.Join(others, ","),
		}
		logs := &servertest.SyncBuffer{}
		ctx, cancel := context.WithCancel(context.Background())
		code := make(chan int, 1)
		wg.Go(func() { code <- run(ctx, args, io.Discard, logs) })
		members[i] = member{logs: logs, stop: func() int { cancel(); return <-code }}
	}
	defer func() {
		for _, m := range members {
			if m.stop != nil {
				m.stop()
			}
		}
		wg.Wait()
	}()
	for i := range members {
		deadline := time.Now().Add(60 * time.Second)
		for members[i].base == "" {
			if time.Now().After(deadline) {
				t.Fatalf("member %d did not start; logs:\n%s", i, members[i].logs)
			}
			if addr := startedAddr(members[i].logs.String()); addr != "" {
				members[i].base = "http://" + addr
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	c := &http.Client{Timeout: 20 * time.Second}
	tokA, term := campaignVia(t, c, members[0].base, "ha", "node-a", "1m")
	campaignVia(t, c, members[1].base, "ha", "node-b", "1m")
	events := openStream(t, c, members[2].base+"/v1/elections/ha/events")
	events.waitFor(t, "reset")

	if code := members[0].stop(); code != 0 {
		t.Errorf("member 0 exited %d", code)
	}
	members[0].stop = nil

	// While the streams elect new leaders among the two members left, a
	// write may be answered 503 (retry later), as a client would see it.
	var st struct{ State string }
	hdr := http.Header{api.TokenHeader: {tokA}}
	retry(t, "heartbeat after losing a member", func() (int, bool) {
		code := call(t, c, http.MethodPut, members[1].base+"/v1/elections/ha/candidates/node-a/heartbeat", "", hdr, &st)
		return code, code == http.StatusOK && st.State == "leader"
	})
	retry(t, "campaign after losing a member", func() (int, bool) {
		code := call(t, c, http.MethodPost, members[2].base+"/v1/elections/ha/candidates", `{"id":"node-c","ttl":"1m"}`, nil, nil)
		return code, code == http.StatusCreated || code == http.StatusConflict // 409: an earlier try got through
	})
	retry(t, "resign after losing a member", func() (int, bool) {
		code := call(t, c, http.MethodDelete, members[2].base+"/v1/elections/ha/candidates/node-a", "", hdr, nil)
		return code, code == http.StatusNoContent || code == http.StatusNotFound // 404: likewise
	})
	events.waitFor(t, "leader.begin")
	// A read the backend cannot answer within api.ReadTimeout (a member
	// still catching up after the failover) is a 503 too, retried.
	for _, m := range members[1:] {
		retry(t, "leader via "+m.base, func() (int, bool) {
			l, code := leaderVia(t, c, m.base, "ha")
			if code == http.StatusOK && (l.ID != "node-b" || l.Term <= term) {
				t.Fatalf("leader via %s: %+v; want node-b after term %d", m.base, l, term)
			}
			return code, code == http.StatusOK
		})
	}
}

// retry repeats a request answered 503 (the backend's failover in
// progress) for up to 30s, and fails the test on any other answer that
// ok does not accept.
func retry(t *testing.T, what string, do func() (code int, ok bool)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, ok := do()
		switch {
		case ok:
			return
		case code != http.StatusServiceUnavailable || time.Now().After(deadline):
			t.Fatalf("%s: status %d", what, code)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
