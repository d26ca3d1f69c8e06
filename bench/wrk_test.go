package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wrkResult is what one wrk run reports (done() of wrkLua prints it).
type wrkResult struct {
	Requests   int64 `json:"requests"`
	DurationUS int64 `json:"duration_us"`
	Connect    int64 `json:"connect"`
	Read       int64 `json:"read"`
	Write      int64 `json:"write"`
	Status     int64 `json:"status"` // answers that were not 2xx or 3xx
	Timeout    int64 `json:"timeout"`
	P50US      int64 `json:"p50_us"`
	P99US      int64 `json:"p99_us"`
	// CPU is the CPU time the server process used during the load.
	CPU time.Duration `json:"-"`
}

// cpuPerRequest is the server's CPU time per request answered, in µs: a
// figure a busy machine disturbs far less than a rate.
func (r wrkResult) cpuPerRequest() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.CPU.Microseconds()) / float64(r.Requests)
}

func (r wrkResult) rate() float64 {
	if r.DurationUS == 0 {
		return 0
	}
	return float64(r.Requests) / (float64(r.DurationUS) / 1e6)
}

// failures counts the requests that did not get a 2xx: socket errors and
// other statuses.
func (r wrkResult) failures() int64 { return r.Connect + r.Read + r.Write + r.Status + r.Timeout }

func (r wrkResult) p50() time.Duration { return time.Duration(r.P50US) * time.Microsecond }
func (r wrkResult) p99() time.Duration { return time.Duration(r.P99US) * time.Microsecond }

// wrkLuaPrelude begins both scripts: the threads (each knows its index,
// tid; done() reaches every one) and base64 for etcd's JSON.
const wrkLuaPrelude = `
local threads, nthreads = {}, 0
function setup(thread)
  thread:set("tid", nthreads)
  nthreads = nthreads + 1
  threads[nthreads] = thread
end
local b64chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function b64(s)
  local out, pad = {}, (3 - #s % 3) % 3
  s = s .. string.rep("\0", pad)
  for k = 1, #s, 3 do
    local a, b, c = s:byte(k, k + 2)
    local v = a * 65536 + b * 256 + c
    for sh = 18, 0, -6 do
      local d = math.floor(v / 2 ^ sh) % 64
      out[#out + 1] = b64chars:sub(d + 1, d + 1)
    end
  end
  local r = table.concat(out)
  return r:sub(1, #r - pad) .. string.rep("=", pad)
end

`

// wrkLua is the script of every wrk load. Its mode (the first argument)
// picks how requests are made:
//
//	cycle FILE          the requests of FILE in turn, one per line, each
//	                    line "METHOD<TAB>PATH<TAB>TOKEN<TAB>BODY" (TOKEN
//	                    the candidate token header, "-" for none, BODY "-"
//	                    for none); thread i starts i/threads into the list,
//	                    so that the requests in flight are of different lines
//	elector PREFIX      campaigns into fresh elections PREFIX-<thread>-<n>
//	elector-session PREFIX ID TOKEN…
//	                    the same, thread i in the i-th session (an id and
//	                    its token), as etcd's campaigns share a lease
//	etcd PREFIX LEASE…  etcd campaigns into fresh elections PREFIX/<thread>/<n>,
//	                    thread i with the i-th lease
//	etcd-grant PREFIX   the same, each on a lease granted just before
//	                    (wrkGrantLua, a script of its own)
//
// done() prints one JSON line (wrkResult).
const wrkLua = wrkLuaPrelude + `
local mode, reqs, i, n, prefix, lease, session, stoken
function init(args)
  mode = args[1]
  n = 0
  if mode == "cycle" then
    reqs = {}
    for line in io.lines(args[2]) do
      local m, p, tok, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      local h = {}
      if tok ~= "-" then h["Elector-Candidate-Token"] = tok end
      if body == "-" then body = nil else h["Content-Type"] = "application/json" end
      reqs[#reqs + 1] = wrk.format(m, p, h, body)
    end
    i = math.floor(#reqs * tid / tonumber(args[3]))
  elseif mode == "elector-session" then
    prefix = args[2]
    session, stoken = args[3 + 2 * tid], args[4 + 2 * tid]
  else
    prefix = args[2]
    lease = args[3 + tid]
  end
end

function request()
  if mode == "cycle" then
    i = i % #reqs + 1
    return reqs[i]
  end
  n = n + 1
  if mode == "elector" then
    return wrk.format("POST", "/v1/elections/" .. prefix .. "-" .. tid .. "-" .. n .. "/candidates",
      {["Content-Type"] = "application/json"}, '{"id":"a","ttl":"1h"}')
  end
  if mode == "elector-session" then
    return wrk.format("POST", "/v1/elections/" .. prefix .. "-" .. tid .. "-" .. n .. "/candidates",
      {["Content-Type"] = "application/json", ["Elector-Session-Token"] = stoken}, '{"id":"a","session":"' .. session .. '"}')
  end
  return wrk.format("POST", "/v3/election/campaign", {["Content-Type"] = "application/json"},
    '{"name":"' .. b64(prefix .. "/" .. tid .. "/" .. n) .. '","lease":"' .. lease .. '","value":"eA=="}')
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`

// wrkGrantLua is the script of mode etcd-grant PREFIX: etcd campaigns into
// fresh elections PREFIX/<thread>/<n>, each on a lease of its own granted
// just before (POST /v3/lease/grant, TTL 1 h), as a candidate with a TTL
// of its own needs and as each of elector's campaigns does. A thread sends
// a grant whenever no granted lease waits for its campaign, so about half
// its requests are grants. requests in done()'s line counts the campaigns
// alone (the rate and the CPU per request are per campaign); the
// latencies are of both kinds of request.
const wrkGrantLua = wrkLuaPrelude + `
local prefix, n, granted = nil, 0, {}
campaigns = 0
function init(args)
  prefix = args[2]
end

function request()
  local id = table.remove(granted)
  if id == nil then
    return wrk.format("POST", "/v3/lease/grant", {["Content-Type"] = "application/json"}, '{"TTL":3600}')
  end
  n = n + 1
  campaigns = campaigns + 1
  return wrk.format("POST", "/v3/election/campaign", {["Content-Type"] = "application/json"},
    '{"name":"' .. b64(prefix .. "/" .. tid .. "/" .. n) .. '","lease":"' .. id .. '","value":"eA=="}')
end

function response(status, headers, body)
  local id = body:match('"ID":"(%d+)"')
  if id then granted[#granted + 1] = id end
end

function done(summary, latency, requests)
  local c = 0
  for _, t in ipairs(threads) do c = c + t:get("campaigns") end
  local e = summary.errors
  io.write(string.format('{"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\n',
    c, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`

// wrkThreads is how many threads wrk runs: one per core of the
// development machine, as the measurements used.
const wrkThreads = 2

// wrkRequest is one line of a cycle file.
type wrkRequest struct {
	method, path, token, body string
}

// runWrk runs wrk against base, served by process pid, with conns
// connections for d, in mode (see wrkLua), and returns its report with the
// CPU time pid used meanwhile. It skips tb when wrk is not
// installed (apt-get install wrk).
func runWrk(tb testing.TB, base string, pid, conns int, d time.Duration, mode string, args ...string) wrkResult {
	tb.Helper()
	bin, err := exec.LookPath("wrk")
	if err != nil {
		tb.Skipf("no wrk (apt-get install wrk): %v", err)
	}
	dir := tb.TempDir()
	script := filepath.Join(dir, "load.lua")
	lua := wrkLua
	if mode == "etcd-grant" {
		lua = wrkGrantLua
	}
	if err := os.WriteFile(script, []byte(lua), 0o600); err != nil {
		tb.Fatal(err)
	}
	threads := min(wrkThreads, conns)
	cmdArgs := []string{"-t", strconv.Itoa(threads), "-c", strconv.Itoa(conns), "-d", fmt.Sprintf("%ds", int(d.Seconds())),
		"--timeout", "5s", "-s", script, base, "--", mode}
	cmdArgs = append(cmdArgs, args...)
	if mode == "cycle" {
		cmdArgs = append(cmdArgs, strconv.Itoa(threads))
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, cmdArgs...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cpu0 := cpuOf(tb, pid)
	if err := cmd.Run(); err != nil {
		tb.Fatalf("wrk %s: %v\n%s%s", strings.Join(cmdArgs, " "), err, out.String(), errOut.String())
	}
	cpu := cpuOf(tb, pid) - cpu0
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var r wrkResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		tb.Fatalf("wrk: %v in\n%s", err, out.String())
	}
	r.CPU = cpu
	return r
}

// wrkCycle runs wrk over reqs in turn (mode cycle).
func wrkCycle(tb testing.TB, base string, pid, conns int, d time.Duration, reqs []wrkRequest) wrkResult {
	tb.Helper()
	var b strings.Builder
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", r.method, r.path, dash(r.token), dash(r.body))
	}
	file := filepath.Join(tb.TempDir(), "requests.tsv")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return runWrk(tb, base, pid, conns, d, "cycle", file)
}
