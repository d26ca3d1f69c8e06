package servertest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/eventually"
)

// SyncBuffer is an io.Writer that several goroutines may write (a logger,
// a child process's output) while a test reads what was written.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// NextLeaderEvent returns the next event of a leader's kind (begin, end,
// error) from a client's watch, skipping the others, and fails tb when the
// stream ends or none comes within 20 seconds (a bound for a loaded
// machine).
func NextLeaderEvent(tb testing.TB, events <-chan client.Event) client.Event {
	tb.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				tb.Fatal("the event stream ended")
			}
			switch ev.Type {
			case client.EventLeaderBegin, client.EventLeaderEnd, client.EventLeaderError:
				return ev
			}
		case <-timeout.C:
			tb.Fatal("no leader event within 20s")
		}
	}
}

// WaitForMetric waits up to 10 seconds until GET /metrics of the gateway
// at url has line (a sample as the exposition writes it, such as
// `elector_leader_transitions_total{election="e",reason="none",type="leader.begin"} 1`),
// and fails tb otherwise. Its connections are closed when it returns, so
// that they are not taken for a leak.
func WaitForMetric(tb testing.TB, url, line string) {
	tb.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	eventually.NoError(tb, 10*time.Second, "the metric "+line, func() error {
		res, err := hc.Get(url + "/metrics")
		if err != nil {
			return err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			return err
		}
		if !strings.Contains("\n"+string(body), "\n"+line+"\n") {
			return fmt.Errorf("no %s at /metrics", line)
		}
		return nil
	})
}
