package api

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// Every answer carries an X-Request-Id: the client's own, or a new one of
// the form "<host>/<random>-<counter>", different for every request; an
// answer with a 5xx status names it in the log line about the failure.
func TestRequestIDIsTheClientsOrANewOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	mine := e.do("GET", "/healthz", nil, header{"X-Request-Id", "trace-42"}).expect(t, http.StatusOK)
	if got := mine.Header.Get("X-Request-Id"); got != "trace-42" {
		t.Errorf("X-Request-Id %q, want the client's trace-42", got)
	}
	form := regexp.MustCompile(`^[^/]+/[A-Za-z0-9]{10}-\d{6,}$`)
	seen := map[string]bool{}
	for range 3 {
		id := e.do("GET", "/v1/elections/none/leader", nil).expect(t, http.StatusNotFound).Header.Get("X-Request-Id")
		if !form.MatchString(id) {
			t.Errorf("X-Request-Id %q is not <host>/<random>-<counter>", id)
		}
		if seen[id] {
			t.Errorf("X-Request-Id %q given twice", id)
		}
		seen[id] = true
	}
}

func TestRequestIDsCountUp(t *testing.T) {
	t.Parallel()
	ids := newRequestIDs()
	a, b := ids.next(), ids.next()
	if !strings.HasSuffix(a, "-000001") || !strings.HasSuffix(b, "-000002") || strings.TrimSuffix(a, "-000001") != strings.TrimSuffix(b, "-000002") {
		t.Errorf("ids %q, %q: want one prefix and counters 000001, 000002", a, b)
	}
}
