package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
)

// TestSidecarProxyReachesTheLeaderAndThenItself: each candidate's sidecar
// forwards to whoever leads; when its own candidate leads, to its own
// registered address.
func TestSidecarProxyReachesTheLeaderAndThenItself(t *testing.T) {
	g := newTestGateway(t)
	a, b := newUpstream(t, "a"), newUpstream(t, "b")
	start := func(id string, u *upstream) (*servertest.SyncBuffer, func() int, string) {
		logs, stop := inProcess(t, "--gateway", g.srv.URL, "--election", "e", "--id", id, "--ttl", "3s",
			"--metadata", string(u.addr()), "--proxy-listen", "127.0.0.1:0")
		re := regexp.MustCompile(`msg="proxy listening" addr=(\S+)`)
		var addr string
		eventually.True(t, 5*time.Second, id+"'s proxy", func() bool {
			m := re.FindStringSubmatch(logs.String())
			if m != nil {
				addr = m[1]
			}
			return m != nil
		})
		return logs, stop, "http://" + addr
	}
	_, stopA, proxyA := start("a", a)
	eventually.True(t, 10*time.Second, "a to lead", func() bool { l, err := g.c.Leader(context.Background(), "e"); return err == nil && l.ID == "a" })
	logsB, stopB, proxyB := start("b", b)
	answer := func(proxy string) string {
		res, err := http.Get(proxy + "/")
		if err != nil {
			return err.Error()
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return fmt.Sprintf("%d %s", res.StatusCode, body)
	}
	eventually.True(t, 10*time.Second, "both proxies to reach a", func() bool { return answer(proxyA) == "200 a" && answer(proxyB) == "200 a" })
	if code := stopA(); code != 0 {
		t.Fatalf("a exit code %d", code)
	}
	eventually.True(t, 10*time.Second, "b's proxy to reach b", func() bool { return answer(proxyB) == "200 b" })
	if b.lastTerm() != "2" {
		t.Fatalf("b got Elector-Term %q; want 2", b.lastTerm())
	}
	if code := stopB(); code != 0 {
		t.Fatalf("b exit code %d; logs:\n%s", code, logsB)
	}
	if _, err := http.Get(proxyB + "/"); err == nil {
		t.Fatal("b's proxy still answers after elector run stopped")
	}
}

func TestProxyCommandServesUntilStoppedAndExitsOnARefusal(t *testing.T) {
	g := newTestGateway(t)
	a := newUpstream(t, "a")
	campaign(t, g, "a", a.addr())
	isolateClient(t)

	ctx, cancel := context.WithCancel(context.Background())
	var logs servertest.SyncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"proxy", "--gateway", g.srv.URL, "--election", "e", "--listen", "127.0.0.1:0"}, &logs, &logs)
	}()
	re := regexp.MustCompile(`msg="proxy listening" addr=(\S+)`)
	eventually.True(t, 5*time.Second, "the proxy to listen", func() bool { return re.MatchString(logs.String()) })
	addr := re.FindStringSubmatch(logs.String())[1]
	eventually.True(t, 10*time.Second, "the proxy to reach a", func() bool {
		res, err := http.Get("http://" + addr + "/")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return string(body) == "a"
	})
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d after SIGTERM; logs:\n%s", c, logs.String())
	}

	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--gateway", g.srv.URL, "--election", "Not A Name", "--listen", "127.0.0.1:0"}, 1, "the gateway refuses the election's event stream"},
		{[]string{"--gateway", g.srv.URL, "--election", "e"}, 2, "--listen is required"},
		{[]string{"--gateway", g.srv.URL, "--listen", "127.0.0.1:0"}, 2, "--election is required"},
		{[]string{"--gateway", g.srv.URL, "--election", "e", "--listen", "127.0.0.1:0", "--stale-after", "0s"}, 2, "--stale-after 0s: want a positive duration"},
		{[]string{"--gateway", "ftp://x", "--election", "e", "--listen", "127.0.0.1:0"}, 2, "is not an http(s) URL"},
		{[]string{"--election", "e", "--listen", "127.0.0.1:0", "e"}, 2, `unexpected argument "e"`},
		{[]string{"--gateway", g.srv.URL, "--election", "e", "--listen", "256.0.0.1:80"}, 1, "--listen"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out servertest.SyncBuffer
			if c := run(context.Background(), append([]string{"proxy"}, tt.args...), &out, &out); c != tt.code || !strings.Contains(out.String(), tt.want) {
				t.Fatalf("exit %d, %q; want %d and %q", c, out.String(), tt.code, tt.want)
			}
		})
	}
}
