package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/electorhq/elector/gateway"
)

// ScrapeTimeout bounds the snapshot of every election that a scrape takes
// for elector_candidates and elector_leaders.
const ScrapeTimeout = 3 * time.Second

// ObserveGateway adds the per-election gauges of gw to the registry, and
// returns the watcher of gw's leader transitions, whose Run the caller
// runs. Call it once per Metrics.
func (m *Metrics) ObserveGateway(gw *gateway.Gateway) *Transitions {
	m.reg.MustRegister(newElectionsCollector(gw, m.electionLabels, m.labelLimit))
	return &Transitions{m: m, gw: gw}
}

// electionsCollector computes the per-election gauges at scrape time from
// one snapshot of every election, so they are never stale and cost nothing
// between scrapes.
type electionsCollector struct {
	gw            *gateway.Gateway
	electionLabel bool
	limit         int // elections with series of their own (0: all); see WithElectionLabelLimit
	elections     *prometheus.Desc
	candidates    *prometheus.Desc
	leaders       *prometheus.Desc
}

// candidateStates are the values of the state label, in a stable order.
var candidateStates = [...]gateway.State{gateway.StateLeader, gateway.StateFollower, gateway.StateError}

func newElectionsCollector(gw *gateway.Gateway, electionLabel bool, limit int) *electionsCollector {
	var election []string
	if electionLabel {
		election = []string{"election"}
	}
	return &electionsCollector{
		gw:            gw,
		electionLabel: electionLabel,
		limit:         limit,
		elections: prometheus.NewDesc(namespace+"_elections",
			"Elections the backend holds.", nil, nil),
		candidates: prometheus.NewDesc(namespace+"_candidates",
			"Candidates by state (leader, follower, error).", append(election, "state"), nil),
		leaders: prometheus.NewDesc(namespace+"_leaders",
			"Elections that have a leader (1 or 0 per election; how many in the _other series and without the election label).", election, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *electionsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.elections
	ch <- c.candidates
	ch <- c.leaders
}

// Collect implements prometheus.Collector. When the snapshot fails it
// sends an invalid metric, which the handler logs and leaves out.
func (c *electionsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	es, _, err := c.gw.Elections(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.candidates, fmt.Errorf("metrics: elections snapshot: %w", err))
		return
	}
	ch <- prometheus.MustNewConstMetric(c.elections, prometheus.GaugeValue, float64(len(es)))
	// total sums every election, other those past the label limit (es is
	// sorted by name, so the same elections have series of their own at
	// every scrape while the set of elections stays).
	var total, other [len(candidateStates)]int
	var leaders, otherLeaders, others int
	for i, e := range es {
		var counts [len(candidateStates)]int
		for _, cand := range e.Candidates {
			if k := stateIndex(cand.State); k >= 0 {
				counts[k]++
			}
		}
		led := 0
		if e.Leader != nil {
			led = 1
		}
		leaders += led
		for k := range counts {
			total[k] += counts[k]
		}
		if !c.electionLabel {
			continue
		}
		if c.limit > 0 && i >= c.limit {
			others++
			otherLeaders += led
			for k := range counts {
				other[k] += counts[k]
			}
			continue
		}
		for k, s := range candidateStates {
			ch <- prometheus.MustNewConstMetric(c.candidates, prometheus.GaugeValue, float64(counts[k]), e.Name, string(s))
		}
		ch <- prometheus.MustNewConstMetric(c.leaders, prometheus.GaugeValue, float64(led), e.Name)
	}
	if c.electionLabel {
		if others > 0 {
			for k, s := range candidateStates {
				ch <- prometheus.MustNewConstMetric(c.candidates, prometheus.GaugeValue, float64(other[k]), OtherElections, string(s))
			}
			ch <- prometheus.MustNewConstMetric(c.leaders, prometheus.GaugeValue, float64(otherLeaders), OtherElections)
		}
		return
	}
	for k, s := range candidateStates {
		ch <- prometheus.MustNewConstMetric(c.candidates, prometheus.GaugeValue, float64(total[k]), string(s))
	}
	ch <- prometheus.MustNewConstMetric(c.leaders, prometheus.GaugeValue, float64(leaders))
}

// stateIndex is the index of s in candidateStates, or -1.
func stateIndex(s gateway.State) int {
	for i, x := range candidateStates {
		if x == s {
			return i
		}
	}
	return -1
}
