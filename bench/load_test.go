package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// measured is what one load produced.
type measured struct {
	ops      int             // operations that succeeded
	failed   int             // transport errors and non-2xx answers
	firstErr string          // the first failure, for the report
	elapsed  time.Duration   // wall time of the load
	lat      []time.Duration // latency of every successful operation, sorted
}

func (m measured) rate() float64 { return float64(m.ops) / m.elapsed.Seconds() }

// pct returns the p-th percentile (0 < p ≤ 100) of the latencies.
func (m measured) pct(p float64) time.Duration {
	if len(m.lat) == 0 {
		return 0
	}
	i := int(float64(len(m.lat))*p/100+0.5) - 1
	return m.lat[min(max(i, 0), len(m.lat)-1)]
}

// load runs op from workers goroutines for d and measures it. op gets its
// worker's index and the worker's iteration count.
func load(workers int, d time.Duration, op func(w, i int) error) measured {
	var (
		mu  sync.Mutex
		all measured
		wg  sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for w := range workers {
		wg.Go(func() {
			var lat []time.Duration
			failed, first := 0, ""
			for i := 0; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				if err := op(w, i); err != nil {
					failed++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			defer mu.Unlock()
			all.ops += len(lat)
			all.lat = append(all.lat, lat...)
			all.failed += failed
			if all.firstErr == "" {
				all.firstErr = first
			}
		})
	}
	wg.Wait()
	all.elapsed = time.Since(start)
	slices.Sort(all.lat)
	return all
}

// parallel runs f(i) for i in [0, n) from workers goroutines and returns
// the first error.
func parallel(n, workers int, f func(i int) error) error {
	var (
		mu    sync.Mutex
		first error
		next  int
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := i >= n || first != nil
				mu.Unlock()
				if stop {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

// newClient returns the HTTP client every system is measured with: at
// most conns connections, all kept alive.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		DisableCompression: true, IdleConnTimeout: time.Minute,
	}}
}

// call makes one request with a JSON body (none if in is nil), fails on a
// non-2xx answer, and decodes the answer into out if it is not nil.
func call(c *http.Client, method, url string, header http.Header, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// seconds is how long each load runs: ELECTOR_BENCH_SECONDS, default 5.
func seconds(tb testing.TB) time.Duration {
	if s := os.Getenv("ELECTOR_BENCH_SECONDS"); s != "" {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || n <= 0 {
			tb.Fatalf("ELECTOR_BENCH_SECONDS=%q: want a positive number", s)
		}
		return time.Duration(n * float64(time.Second))
	}
	return 5 * time.Second
}

// table collects the rows of a comparison and prints them as Markdown.
type table struct {
	title string
	rows  [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) String() string {
	var b strings.Builder
	b.WriteString("\n### " + t.title + "\n\n")
	for i, r := range t.rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if i == 0 {
			b.WriteString(strings.Repeat("|---", len(r)) + "|\n")
		}
	}
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func failures(m measured) string {
	if m.failed == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", m.failed, short(m.firstErr))
}

// short cuts an error message for a table cell.
func short(e string) string {
	if len(e) > 100 {
		return e[:100] + "…"
	}
	return e
}
