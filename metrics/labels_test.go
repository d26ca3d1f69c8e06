package metrics_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/electorhq/elector/metrics"
)

// TestElectionLabelsOffAggregatesOverElections checks that without the
// election label no series names an election, and the per-election series
// are summed over all elections.
func TestElectionLabelsOffAggregatesOverElections(t *testing.T) {
	s := newServer(t, metrics.WithElectionLabels(false))
	s.campaign("billing", "a")
	s.campaign("billing", "b")
	s.campaign("reports", "a")

	text := s.waitFor(`elector_leader_transitions_total{reason="none",type="leader.begin"} 2`)
	for _, line := range []string{
		`elector_elections 2`,
		`elector_candidates{state="leader"} 2`,
		`elector_candidates{state="follower"} 1`,
		`elector_candidates{state="error"} 0`,
		`elector_leaders 2`,
	} {
		if !hasLine(text, line) {
			t.Errorf("no line %s", line)
		}
	}
	for _, bad := range []string{"election=", "billing", "reports"} {
		if strings.Contains(text, bad) {
			t.Errorf("the scrape names %q:\n%s", bad, elector(text))
		}
	}
}

// TestNoRawPathInLabels checks that requests are labelled by route pattern
// and never by the path a client sent, found or not.
func TestNoRawPathInLabels(t *testing.T) {
	s := newServer(t)
	for _, path := range []string{
		"/v1/elections/xyz123/leader",
		"/v1/elections/xyz123/candidates/xyz123",
		"/xyz123",
		"/v1/elections/xyz123/xyz123/xyz123",
	} {
		if code, _ := s.do("GET", path, "", ""); code != http.StatusNotFound {
			t.Fatalf("GET %s: %d", path, code)
		}
	}
	if code, _ := s.do("XYZ123", "/v1/elections", "", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("method XYZ123: %d", code)
	}
	text := s.scrape()
	if strings.Contains(text, "xyz123") || strings.Contains(text, "XYZ123") {
		t.Errorf("a raw path or method is a label value:\n%s", elector(text))
	}
	for _, line := range []string{
		`elector_http_requests_total{code="404",method="GET",route="/v1/elections/{election}/leader"} 1`,
		`elector_http_requests_total{code="404",method="GET",route="/v1/elections/{election}/candidates/{id}"} 1`,
		`elector_http_requests_total{code="404",method="GET",route="unmatched"} 2`,
		`elector_http_requests_total{code="405",method="OTHER",route="unmatched"} 1`,
	} {
		if !hasLine(text, line) {
			t.Errorf("no line %s\n%s", line, elector(text))
		}
	}
}

// TestElectionLabelLimitSumsTheRestUnderOther checks that past the label
// limit elections share the series labelled election="_other", which sum
// them, so that the number of series stays bounded and sums stay exact.
func TestElectionLabelLimitSumsTheRestUnderOther(t *testing.T) {
	s := newServer(t, metrics.WithElectionLabelLimit(2))
	for _, e := range []string{"a1", "a2", "a3", "a4"} {
		s.campaign(e, "x")
	}
	s.campaign("a4", "y")

	text := s.waitFor(
		`elector_leader_transitions_total{election="_other",reason="none",type="leader.begin"} 2`,
	)
	for _, line := range []string{
		`elector_elections 4`,
		`elector_candidates{election="a1",state="leader"} 1`,
		`elector_candidates{election="a2",state="leader"} 1`,
		`elector_candidates{election="_other",state="leader"} 2`,
		`elector_candidates{election="_other",state="follower"} 1`,
		`elector_leaders{election="_other"} 2`,
		`elector_leaders{election="a1"} 1`,
	} {
		if !hasLine(text, line) {
			t.Errorf("no line %s\n%s", line, elector(text))
		}
	}
	for _, bad := range []string{`election="a3"`, `election="a4"`} {
		if strings.Contains(text, bad) {
			t.Errorf("the scrape has series of %s past the limit:\n%s", bad, elector(text))
		}
	}
	// Two elections saw transitions first and keep their own series.
	if n := strings.Count(text, `elector_leader_transitions_total{election="a`); n != 2 {
		t.Errorf("%d elections with transition series of their own, want 2:\n%s", n, elector(text))
	}
}
