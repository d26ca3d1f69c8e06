// Package bench measures elector end to end, two ways.
//
// Its benchmarks time a heartbeat over real HTTP on loopback against each
// backend, beside a baseline measured in the same run (an HTTP handler that
// does nothing), so that results are read as ratios that hold from one
// machine to another. Run them with
//
//	go test -run '^$' -bench . -benchmem ./bench/
//
// docs/performance.md records a run and how to read it.
//
// Its Load is the engine of `elector bench`: candidates heartbeating every
// TTL/3 through one or more gateways, event-stream subscribers, leader
// reads and bursts of campaigns, measured into fixed-size histograms. A
// harness drives the same load and sees every operation and event through
// Config.Observe and Config.ObserveEvent:
//
//	l, err := bench.New(bench.Config{
//		Gateways:   []string{"http://127.0.0.1:8080"},
//		Candidates: 100, Elections: 10, Subscribers: 1,
//		Duration:   30 * time.Second,
//	})
//	if err != nil { … }
//	sum, err := l.Run(ctx)
package bench
