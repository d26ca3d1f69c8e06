// Package metrics exports elector's Prometheus metrics from a registry of
// its own (never the global one): HTTP requests by chi route pattern, leader
// transitions, candidates and leaders per election, SSE subscribers, webhook
// deliveries and attempts, backend operations, and the Go runtime and
// process collectors.
//
// A Metrics is created once per process and wired into the other
// components through small seams, so that none of them imports Prometheus:
//
//	m := metrics.New(metrics.WithElectionLabels(true), metrics.WithLogger(log))
//	gw := gateway.New(m.ObserveBackend(backend), gcfg) // times every backend call, hints kept
//	transitions := m.ObserveGateway(gw)      // candidates and leaders at scrape time
//	go transitions.Run(ctx)                  // counts leader.begin / end / error
//	hooksCfg.Metrics = m.Webhooks()          // webhook deliveries and attempts
//	apiCfg.Metrics = m                       // GET /metrics, requests, SSE subscribers
//
// Labels never carry a raw URL path, a candidate id or a token: routes are
// chi patterns ("unmatched" for unknown paths), and the election label (the
// only label whose values come from clients) names at most
// DefaultElectionLabelLimit elections (WithElectionLabelLimit), the others
// being summed under election="_other", so that series and their memory
// stay bounded however many elections there are. WithElectionLabels(false)
// drops the label: the series are then aggregated over all elections.
//
// Counters count what this replica saw: every replica watches every event,
// so leader transitions are best read per instance (or with max), not
// summed over replicas.
package metrics
