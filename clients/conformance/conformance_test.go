package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// waitLimit bounds every wait of the suite for something that must
// happen. It is far above how long anything takes: it only keeps a
// broken driver from hanging the run.
const waitLimit = 30 * time.Second

// TestConformance runs every scenario against every client's driver:
// TestConformance/<driver>/<scenario>. A driver that cannot run here is
// skipped, unless ELECTOR_CONFORMANCE_REQUIRE names it.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts elector serve processes and every client's driver")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/elector", "./clients/conformance/godriver")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	required := map[string]bool{}
	for _, name := range strings.Split(os.Getenv(requireEnv), ",") {
		if name = strings.TrimSpace(name); name != "" {
			required[name] = true
		}
	}
	ds := drivers(root, filepath.Join(bin, "godriver"))
	for name := range required {
		if !slices.ContainsFunc(ds, func(d driver) bool { return d.name == name }) {
			t.Fatalf("%s names %q, which is no driver (go, python, typescript)", requireEnv, name)
		}
	}

	env := &suite{root: root, elector: filepath.Join(bin, "elector")}
	env.gateway = startGateway(t, env.elector)
	env.webhook = captureWebhook(t, env.gateway)
	for _, d := range ds {
		t.Run(d.name, func(t *testing.T) {
			if d.missing != "" {
				if required[d.name] {
					t.Fatalf("the %s driver cannot run: %s; %s requires it", d.name, d.missing, requireEnv)
				}
				t.Skipf("the %s driver cannot run: %s", d.name, d.missing)
			}
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					sc.run(t, &setup{suite: env, driver: d, election: electionName(d.name, sc.name)})
				})
			}
		})
	}
	if m := env.measured(); m != "" {
		t.Logf("the leader's signal once its heartbeats stopped getting through (a paused gateway, refused session heartbeats), per client:\n%s", m)
	}
}

// suite is what every scenario shares: the repository, the elector
// binary, one gateway, and one captured webhook delivery.
type suite struct {
	root    string
	elector string
	gateway *gatewayProc
	webhook capturedWebhook

	mu       sync.Mutex
	stepDown []string // the step-down measurements, one line per driver
}

// measure notes a step-down measurement for the summary.
func (s *suite) measure(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stepDown = append(s.stepDown, line)
}

// measured is the summary of the step-down measurements.
func (s *suite) measured() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, l := range s.stepDown {
		b.WriteString("\t" + l + "\n")
	}
	return b.String()
}

// setup is what one scenario runs with: the suite, the driver under test
// and an election of its own on the shared gateway.
type setup struct {
	*suite
	driver   driver
	election string
}

// start starts the driver; it exits when the test ends.
func (s *setup) start(t *testing.T) *proc {
	t.Helper()
	return startDriver(t, s.driver, s.root)
}

// direct is a Go client of the shared gateway, for the suite's own calls.
func (s *setup) direct() *client.Client { return client.New(s.gateway.URL) }

// candidate starts a candidacy named id in the scenario's election
// through gateways with ttl, and returns the step-down margin the client
// reports it uses.
func (s *setup) candidate(t *testing.T, p *proc, id string, gateways []string, ttl time.Duration) time.Duration {
	t.Helper()
	var res struct {
		MarginMS float64 `json:"margin_ms"`
	}
	p.must(map[string]any{"cmd": "start", "name": id, "gateways": gateways, "election": s.election,
		"candidate": id, "ttl_ms": ttl.Milliseconds()}, &res)
	margin := time.Duration(res.MarginMS * float64(time.Millisecond))
	if margin <= 0 || margin >= ttl {
		t.Fatalf("the %s client reports a step-down margin of %s for a TTL of %s", s.driver.name, margin, ttl)
	}
	return margin
}

// is matches a report of event for name.
func is(event, name string) func(report) bool {
	return func(r report) bool { return r.Event == event && r.Name == name }
}

// leadingAfter matches a leading report of name with a term above term.
func leadingAfter(name string, term uint64) func(report) bool {
	return func(r report) bool { return r.Event == "leading" && r.Name == name && r.Term > term }
}

// count is the number of reports that match.
func count(reports []report, match func(report) bool) int {
	n := 0
	for _, r := range reports {
		if match(r) {
			n++
		}
	}
	return n
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// electionName names the election of one scenario for one driver: unique
// per pair, and within the gateway's 63 characters however long the
// scenario's name is.
func electionName(driver, scenario string) string {
	name := driver + "-" + strings.ReplaceAll(scenario, "_", "-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}
