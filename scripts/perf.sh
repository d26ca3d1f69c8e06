#!/usr/bin/env bash
# perf.sh: the measurements of docs/performance.md in one command, on this
# machine: elector serve (a release build, default settings) beside etcd 3.4,
# both loaded by wrk, at fleet scale (see TestFleet in bench/fleet_test.go).
# Needs Go, etcd (apt-get install etcd-server) and wrk (apt-get install wrk).
# Run it on an idle machine; it takes about half an hour. Extra arguments go
# to go test; the environment variables of TestFleet apply.
#   scripts/perf.sh                      # everything, three rounds of each rate
#   ELECTOR_BENCH_FLEET=heartbeats scripts/perf.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out="${ELECTOR_BENCH_OUT:-perf-$(date +%Y%m%d-%H%M).md}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); results go to $out"
ELECTOR_BENCH_FLEET="${ELECTOR_BENCH_FLEET:-all}" \
ELECTOR_BENCH_ROUNDS="${ELECTOR_BENCH_ROUNDS:-3}" \
ELECTOR_BENCH_OUT="$out" \
	go test -count=1 -run '^TestFleet$' -v -timeout 120m ./bench/ "$@"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
