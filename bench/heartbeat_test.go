package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/backends/nats"
	"github.com/electorhq/elector/gateway"
)

var quiet = slog.New(slog.DiscardHandler)

// serve starts a gateway over b on loopback until the benchmark ends.
func serve(b *testing.B, be gateway.Backend) string {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	gw := gateway.New(be, gateway.Config{Logger: quiet})
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	srv := httptest.NewServer(api.New(gw, api.Config{Logger: quiet}))
	b.Cleanup(func() { srv.Close(); cancel(); <-done })
	return srv.URL
}

// campaign puts n candidates in election and returns the token of the last.
func campaign(b *testing.B, c *http.Client, base, election string, n int) (id, token string) {
	b.Helper()
	for i := range n {
		id = fmt.Sprintf("node-%04d", i)
		body := fmt.Sprintf(`{"id":%q,"ttl":"1h"}`, id)
		resp, err := c.Post(base+"/v1/elections/"+election+"/candidates", "application/json", bytes.NewBufferString(body))
		if err != nil {
			b.Fatal(err)
		}
		var st struct{ Token string }
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusCreated {
			b.Fatalf("campaign %s: %d %v", id, resp.StatusCode, err)
		}
		token = st.Token
	}
	return id, token
}

// heartbeats measures PUT …/heartbeat of the last of n candidates.
func heartbeats(b *testing.B, base string, n int) {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	id, token := campaign(b, c, base, "bench", n)
	req, err := http.NewRequest(http.MethodPut, base+"/v1/elections/bench/candidates/"+id+"/heartbeat", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set(api.TokenHeader, token)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("heartbeat: %d", resp.StatusCode)
		}
	}
}

// BenchmarkBaselineHTTP is the yardstick: a PUT on loopback to a handler
// that answers 200 with a small JSON body and does nothing else.
func BenchmarkBaselineHTTP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"state":"leader"}`))
	}))
	defer srv.Close()
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/x", nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkHeartbeat measures a candidate's heartbeat through the whole
// gateway (routing, token check, backend write, JSON answer) with 1, 100
// and 1000 candidates in the election; the etcd backend against an etcd
// the benchmark starts (skipped when none is installed, see startEtcd).
func BenchmarkHeartbeat(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("memory/candidates=%d", n), func(b *testing.B) {
			heartbeats(b, serve(b, memory.New()), n)
		})
	}
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("embedded-nats/candidates=%d", n), func(b *testing.B) {
			be, err := nats.OpenEmbedded(context.Background(), nats.EmbeddedConfig{DataDir: b.TempDir()}, nats.Config{}, nats.WithLogger(quiet))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = be.Close() })
			heartbeats(b, serve(b, be), n)
		})
	}
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("etcd/candidates=%d", n), func(b *testing.B) {
			srv := startEtcd(b) // skips without an etcd binary
			be, err := etcd.New(etcd.Config{Endpoints: []string{srv.URL}, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = be.Close() })
			heartbeats(b, serve(b, be), n)
		})
	}
}
