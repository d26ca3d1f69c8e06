package sidecar

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
)

// TestSecondSidecarWithTheSameIDSaysPassID: two sidecars with one id
// (the host name, by default): the second is refused, says once that the
// id is held and to pass --id, keeps trying meanwhile, and campaigns as
// soon as the first has resigned.
func TestSecondSidecarWithTheSameIDSaysPassID(t *testing.T) {
	g := newTestGateway(t)
	// Count the campaigns the gateway refuses as candidate-exists.
	var refused atomic.Int64
	target, _ := url.Parse(g.srv.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(cw, r)
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/candidates") && cw.status == http.StatusConflict {
			refused.Add(1)
		}
	}))
	t.Cleanup(counting.Close)
	log := t.TempDir() + "/log"
	a := start(t, candidate(g.srv.URL, "same", 3*time.Second, log))
	eventually.True(t, 5*time.Second, "the first leads", func() bool { return slices.Contains(readLines(log), "begin same 1 elected") })
	b := start(t, candidate(counting.URL, "same", 3*time.Second, log))
	logsB := b.logs
	eventually.True(t, 10*time.Second, "three refused campaigns of the second", func() bool { return refused.Load() >= 3 })
	const said = `id \"same\" is held by a live candidate; pass --id`
	if n := strings.Count(logsB.String(), said); n != 1 {
		t.Fatalf("the second sidecar said %d times that the id is held (want once); logs:\n%s", n, logsB)
	}
	if n := strings.Count(logsB.String(), "is held by a live candidacy"); n != 1 {
		t.Fatalf("the candidacy warned %d times (want once); logs:\n%s", n, logsB)
	}
	if err := a.stop(); err != nil {
		t.Fatalf("the first sidecar's Run: %v; logs:\n%s", err, a.logs)
	}
	eventually.True(t, 10*time.Second, "the second leads once the first resigned", func() bool {
		return slices.Contains(readLines(log), "begin same 2 elected")
	})
	if err := b.stop(); err != nil {
		t.Fatalf("the second sidecar's Run: %v; logs:\n%s", err, logsB)
	}
	if got := readLines(log); !slices.Equal(got, []string{"begin same 1 elected", "end same 1 resigned", "begin same 2 elected", "end same 2 resigned"}) {
		t.Fatalf("commands ran: %q", got)
	}
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Flush passes flushes on, for the event stream.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
