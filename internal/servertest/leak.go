package servertest

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// gatewayCode matches a stack line of the packages a gateway runs: the
// server, the gateway, the API, webhooks, metrics and the backends. The
// tests' own packages (server_test, …) and this one do not match.
var gatewayCode = regexp.MustCompile(`github\.com/electorhq/elector/(server|gateway|api|webhooks|metrics|backends/[a-z]+)\.`)

// stacks returns the stack of every goroutine of the process by id.
func stacks() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(strings.TrimPrefix(g, "goroutine "), " ")
		out[id] = g
	}
	return out
}

// goroutineIDs returns the ids of the goroutines of the process.
func goroutineIDs() map[string]bool {
	ids := map[string]bool{}
	for id := range stacks() {
		ids[id] = true
	}
	return ids
}

// leaked returns the stacks of the goroutines not in before that run (or
// were started by) a gateway's code.
func leaked(before map[string]bool) []string {
	var out []string
	for id, stack := range stacks() {
		if !before[id] && gatewayCode.MatchString(stack) {
			out = append(out, stack)
		}
	}
	return out
}

// checkLeaks fails tb if goroutines of a gateway's code that started
// after before remain once every gateway has stopped. Goroutines that are
// ending as it looks are waited for, up to within.
func checkLeaks(tb testing.TB, before map[string]bool, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		left := leaked(before)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Errorf("servertest: %d goroutines of the gateway outlived it:\n\n%s", len(left), strings.Join(left, "\n\n"))
			return
		}
		time.Sleep(wait)
	}
}
