package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// fanned is what one transition delivered to n subscribers produced.
type fanned struct {
	measured        // lat: from sending the transition to each delivery
	opened   int    // subscribers whose stream was ready
	openFail int    // subscribers whose stream could not be opened
	openErr  string // the first such failure
	openTime time.Duration
	missed   int // ready subscribers that did not get the event within 30s
}

// subscribe opens one stream; it returns once the stream is ready, with a
// channel that gets the time the transition's event arrived (or is closed
// without it). Its reader goroutine is added to wg and ends with ctx.
type subscribe func(ctx context.Context, wg *sync.WaitGroup) (<-chan time.Time, error)

// fan opens n streams, 32 at a time, makes one transition, and measures
// its delivery to every stream.
func fan(n int, open subscribe, transition func() error) fanned {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var (
		mu  sync.Mutex
		out fanned
		got []<-chan time.Time
	)
	start := time.Now()
	_ = parallel(n, 32, func(int) error {
		ch, err := open(ctx, &wg)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			out.openFail++
			if out.openErr == "" {
				out.openErr = err.Error()
			}
			return nil
		}
		got = append(got, ch)
		return nil
	})
	out.openTime = time.Since(start)
	out.opened = len(got)

	sent := time.Now()
	if err := transition(); err != nil {
		out.failed, out.firstErr = 1, err.Error()
	}
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	record := func(at time.Time, ok bool) {
		if ok {
			out.lat = append(out.lat, at.Sub(sent))
		} else {
			out.missed++
		}
	}
	expired := false
	for _, ch := range got {
		if !expired {
			select {
			case at, ok := <-ch:
				record(at, ok)
				continue
			case <-deadline.C:
				expired = true
			}
		}
		select { // past the deadline: only what has arrived counts
		case at, ok := <-ch:
			record(at, ok)
		default:
			out.missed++
		}
	}
	out.elapsed = time.Since(sent)
	out.ops = len(out.lat)
	slices.Sort(out.lat)
	return out
}

// sseClient opens as many connections as there are streams.
func sseClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
}

// openSSE subscribes to url (an elector event stream) and waits for the
// event of type typ.
func openSSE(c *http.Client, url, typ string) subscribe {
	return func(ctx context.Context, wg *sync.WaitGroup) (<-chan time.Time, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			return nil, fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
		}
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				resp.Body.Close()
				return nil, err
			}
			if strings.HasPrefix(line, ": connected") {
				break
			}
		}
		ch := make(chan time.Time, 1)
		wg.Go(func() {
			defer resp.Body.Close()
			defer close(ch)
			event := ""
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				switch {
				case strings.HasPrefix(line, "event: "):
					event = strings.TrimSpace(strings.TrimPrefix(line, "event: "))
				case strings.HasPrefix(line, "data: ") && event == typ:
					ch <- time.Now()
					return
				case line == "\n":
					event = ""
				}
			}
		})
		return ch, nil
	}
}

// openEtcdWatch watches the keys under prefix with POST /v3/watch of
// etcd's JSON gateway and waits for the first event.
func openEtcdWatch(c *http.Client, base, prefix string) subscribe {
	body := fmt.Sprintf(`{"create_request":{"key":%q,"range_end":%q}}`, b64(prefix), b64(prefixEnd(prefix)))
	return func(ctx context.Context, wg *sync.WaitGroup) (<-chan time.Time, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v3/watch", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("watch: %d", resp.StatusCode)
		}
		dec := json.NewDecoder(resp.Body)
		var created struct {
			Result struct {
				Created bool `json:"created"`
			} `json:"result"`
		}
		if err := dec.Decode(&created); err != nil || !created.Result.Created {
			resp.Body.Close()
			return nil, fmt.Errorf("watch not created: %v", err)
		}
		ch := make(chan time.Time, 1)
		wg.Go(func() {
			defer resp.Body.Close()
			defer close(ch)
			for {
				var m struct {
					Result struct {
						Events []json.RawMessage `json:"events"`
					} `json:"result"`
				}
				if dec.Decode(&m) != nil {
					return
				}
				if len(m.Result.Events) > 0 {
					ch <- time.Now()
					return
				}
			}
		})
		return ch, nil
	}
}

// compareFanout: one transition delivered to n subscribers of one
// election (elector's SSE stream; etcd's HTTP watch of a prefix).
func compareFanout(t *testing.T, srv *etcdServer) {
	ns := []int{500, 2000}
	if os.Getenv("ELECTOR_LONG_BENCH") != "" {
		ns = append(ns, 10000)
	}
	tb := &table{title: "One transition to N subscribers of one election"}
	tb.add("N", "system", "opened (s to open)", "p50", "p99", "max", "missed", "open failures", "p99 vs etcd watch", "transition", "campaign right after")
	c := sseClient()
	systems := electors(t, srv.URL, "bench-fan")
	for _, n := range ns {
		prefix := fmt.Sprintf("native-fan-%d/", n)
		w := fan(n, openEtcdWatch(c, srv.URL, prefix), func() error {
			return call(c, "POST", srv.URL+"/v3/kv/put", nil, map[string]any{"key": b64(prefix + "x"), "value": b64("x")}, nil)
		})
		row := func(name string, f fanned, vs string, after string) {
			transition := "ok"
			if f.failed > 0 {
				transition = short(f.firstErr)
			}
			tb.add(fmt.Sprint(n), name, fmt.Sprintf("%d (%.1f s)", f.opened, f.openTime.Seconds()), ms(f.pct(50)), ms(f.pct(99)), ms(f.pct(100)),
				fmt.Sprint(f.missed), strings.TrimSpace(fmt.Sprintf("%d %s", f.openFail, short(f.openErr))), vs, transition, after)
		}
		row("etcd "+srv.Version+" HTTP /v3/watch", w, "1.00×", "–")
		for _, e := range systems {
			election := fmt.Sprintf("fan-%d", n)
			if err := call(c, "POST", e.url+"/v1/elections/"+election+"/candidates", nil, map[string]any{"id": "a", "ttl": "1h"}, nil); err != nil {
				t.Fatalf("%s: %v", e.name, err)
			}
			f := fan(n, openSSE(c, e.url+"/v1/elections/"+election+"/events", string(gateway.EventCandidateJoined)), func() error {
				return call(c, "POST", e.url+"/v1/elections/"+election+"/candidates", nil, map[string]any{"id": "b", "ttl": "1h"}, nil)
			})
			vs := "–"
			if w.pct(99) > 0 && f.pct(99) > 0 {
				vs = fmt.Sprintf("%.2f×", float64(f.pct(99))/float64(w.pct(99)))
			}
			row("elector "+e.name+" SSE", f, vs, afterLoad(c, e.url, fmt.Sprintf("after-fan-%d", n)))
		}
	}
	t.Log(tb.String())
}
