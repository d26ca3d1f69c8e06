// Package bench holds the benchmarks that measure elector end to end: a
// heartbeat over real HTTP on loopback against each backend, beside a
// baseline measured in the same run (an HTTP handler that does nothing), so
// that results are read as ratios that hold from one machine to another.
//
// Run them with
//
//	go test -run '^$' -bench . -benchmem ./bench/
//
// docs/performance.md records a run and how to read it.
package bench
