// Package bench holds the benchmarks that measure elector end to end: a
// heartbeat over real HTTP on loopback against each backend, beside a
// baseline measured in the same run (an HTTP handler that does nothing), so
// that results are read as ratios that hold from one machine to another.
//
// Run them with
//
//	go test -run '^$' -bench . -benchmem ./bench/
//
// TestCompareWithEtcd measures heartbeats, leader reads, campaigns and the
// fan-out of a transition to many subscribers beside etcd 3.4's own HTTP
// API, in the same run; it runs only when asked and etcd is installed:
//
//	ELECTOR_BENCH_ETCD=1 go test -run TestCompareWithEtcd -v -timeout 30m ./bench/
//
// TestFleet measures `elector serve` itself, a release build in its own
// process with its default configuration, beside etcd 3.4 in its own
// process, both loaded by wrk at fleet scale (3,000 candidates heartbeating
// in 1,000 elections, leader reads, campaigns at 0 and at 100,000
// elections, resident memory of 100,000 elections of one and of three
// candidates, failover after a crashed leader, and a rolling restart and
// crashes of an embedded three-member cluster), with the gateway's HTTP
// ceiling (its GET /healthz) and the floor under it (barehttp: net/http
// alone, with elector serve's server settings); scripts/perf.sh runs it
// all in one command, and its doc comment lists the knobs (profiles
// included).
//
// docs/performance.md records runs and how to read them.
package bench
