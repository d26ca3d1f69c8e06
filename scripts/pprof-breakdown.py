#!/usr/bin/env python3
"""pprof-breakdown.py: where a request's CPU, or the heap, goes, by the
categories of docs/performance.md. Reads `go tool pprof -traces` output:

  go tool pprof -traces BIN heartbeat.cpu.pprof | scripts/pprof-breakdown.py cpu REQUESTS
  go tool pprof -sample_index=inuse_space -traces BIN memory.heap.pprof | scripts/pprof-breakdown.py heap ITEMS

REQUESTS (the requests the profile covers) turns seconds into µs per request;
ITEMS (elections or candidates) turns bytes into bytes per item. The
profiles come from TestFleet with ELECTOR_BENCH_PROFILE (bench/fleet_test.go).
"""
import re
import sys

# CPU: first the categories that own a whole stack wherever they appear in
# it, then the frame nearest the leaf that matches decides.
CPU_DOMINANT = [
    ("GC (background)", [r"runtime\.gcBgMarkWorker", r"runtime\.bgsweep", r"runtime\.bgscavenge"]),
    ("request log", [r"log/slog"]),
    ("backend: NATS server", [r"nats-server/v2/server"]),
    ("backend: client side and view", [r"nats-io/nats%2ego\.\(\*Conn\)\.(readLoop|flusher)",
                                       r"backends/nats\.\(\*Backend\)\.(Run|fetchHead)", r"gateway\.\(\*ReadIndex\)\.start"]),
]
CPU_LEAFMOST = [
    ("JSON answer", [r"api\.writeJSON", r"api\.statusDoc\.appendJSON", r"api\.leaderDoc", r"api\.statusOf", r"api\.leaderDocOf"]),
    ("backend: client side and view", [r"electorhq/elector/backends/", r"nats-io/nats%2ego", r"nats\.go/jetstream"]),
    ("auth and token checks", [r"api\.\(\*api\)\.limitHeartbeats", r"gateway\.HashToken", r"api\.\(\*api\)\.authenticate",
                               r"api\.candidateParams", r"gateway\.Validate", r"gateway\.\(\*Gateway\)\.checkCandidate"]),
    ("metrics", [r"metrics\.\(\*Metrics\)\.Middleware", r"prometheus"]),
    ("handler and gateway", [r"api\.\(\*api\)\.(heartbeat|getLeader|campaign|healthz)", r"gateway\.\(\*Gateway\)"]),
    ("routing and middleware", [r"go-chi/chi", r"api\.\(\*api\)\.(limitBodyTime|recoverPanics|logRequests|guard|limitRequests|capReads)",
                                r"main\.\(\*phasedHandler\)", r"main\.serve\.endStreamsOn", r"api\.decodeParams"]),
    ("HTTP server (parse, syscalls)", [r"net/http", r"internal/poll", r"syscall", r"bufio", r"net\.\(\*conn\)", r"net\.\(\*netFD\)"]),
]
HEAP_LEAFMOST = [
    ("view: records", [r"backends/nats\.(decode|recordValue|entries|\(\*reconciler\)\.(record|put))", r"gateway\.\(\*Record\)"]),
    ("view: liveness known (beats)", [r"backends/nats\.\(\*Backend\)\.(remember|learned|buried|beatKey)"]),
    ("view: leaders watched", [r"backends/nats\.\(\*Backend\)\.(watchLeader|queueLocked|rewatchLocked)"]),
    ("NATS: liveness messages", [r"nats-server/v2/server\.\(\*memStore\)"]),
    ("NATS: records store", [r"nats-server/v2/server\.\(\*fileStore\)", r"nats-server/v2/server\.\(\*msgBlock\)"]),
    ("NATS: subject trees, TTL wheel", [r"nats-server/v2/server/stree", r"nats-server/v2/server/thw"]),
    ("NATS: buffers and pools", [r"nats-server/v2/server\.init", r"nats-server/v2/server\.\(\*client\)", r"sync\.\(\*Pool\)"]),
    ("NATS: other server state", [r"nats-server/v2/server"]),
    ("NATS client", [r"nats-io/nats%2ego", r"nats\.go/jetstream"]),
    ("hub ring", [r"gateway\.newHub", r"gateway\.\(\*hub\)"]),
    ("metrics", [r"prometheus"]),
    ("rate-limit buckets", [r"api\.\(\*bucketLimiter"]),
    ("HTTP and API", [r"net/http", r"electorhq/elector/api"]),
]
UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9}
VALUE = re.compile(r"\s*([\d.]+)(ns|us|ms|s|B|kB|KB|MB|GB)\s+(.*)")


def samples(text):
    for block in re.split(r"-+\+-+", text):
        lines = [l for l in block.strip().split("\n") if l.strip()]
        while lines and not VALUE.match(lines[0]):
            lines = lines[1:]  # labels of the sample
        if not lines:
            continue
        m = VALUE.match(lines[0])
        yield float(m.group(1)) * UNITS[m.group(2)], [m.group(3).strip()] + [l.strip() for l in lines[1:]]


def classify(frames, dominant, leafmost):
    stack = "\n".join(frames)
    for name, pats in dominant:
        if any(re.search(p, stack) for p in pats):
            return name
    for f in frames:
        for name, pats in leafmost:
            if any(re.search(p, f) for p in pats):
                return name
    return "other"


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("cpu", "heap"):
        sys.exit(__doc__)
    cpu = sys.argv[1] == "cpu"
    per = float(sys.argv[2]) if len(sys.argv) > 2 else 0
    totals, total = {}, 0.0
    for v, frames in samples(sys.stdin.read()):
        cat = classify(frames, CPU_DOMINANT if cpu else [], CPU_LEAFMOST if cpu else HEAP_LEAFMOST)
        totals[cat] = totals.get(cat, 0) + v
        total += v
    for name, v in sorted(totals.items(), key=lambda x: -x[1]) + [("total", total)]:
        line = f"{name:34s} {v:8.2f} s" if cpu else f"{name:34s} {v / 1e6:8.1f} MB"
        line += f" {100 * v / total:5.1f}%"
        if per:
            line += f"  {v * 1e6 / per:8.1f} µs each" if cpu else f"  {v / per:8.0f} B each"
        print(line)


if __name__ == "__main__":
    main()
