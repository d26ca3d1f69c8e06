package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/electorhq/elector/client"
)

// Kind names one kind of operation a Load measures.
type Kind int

// The kinds of operation, in the order a summary lists them.
const (
	Campaign      Kind = iota // a steady candidate campaigns (at the start, or again after it expired)
	Heartbeat                 // a steady candidate heartbeats
	Resign                    // a steady candidate resigns at the end
	LeaderRead                // GET …/leader
	BurstCampaign             // a campaign into a fresh election
	BurstResign               // the resignation that follows it
	Event                     // an event received on a stream: latency from its timestamp
	ScheduleLag               // how late a heartbeat started behind its schedule
	numKinds
)

var kindNames = [numKinds]string{
	Campaign:      "campaign",
	Heartbeat:     "heartbeat",
	Resign:        "resign",
	LeaderRead:    "leader_read",
	BurstCampaign: "burst_campaign",
	BurstResign:   "burst_resign",
	Event:         "event",
	ScheduleLag:   "schedule_lag",
}

// String returns the kind's name as summaries print it: "heartbeat".
func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return "kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// kindStats counts the outcomes of one kind of operation.
type kindStats struct {
	ok     Histogram // latencies of the operations that succeeded
	errors atomic.Uint64
}

// stats is what a Load measures; every method is safe for concurrent use.
type stats struct {
	kinds [numKinds]kindStats

	mu       sync.Mutex
	byType   map[string]uint64 // problem type, or a transport error's class
	byStatus map[string]uint64 // HTTP status, or "none" when there was no answer
}

func newStats() *stats {
	return &stats{byType: map[string]uint64{}, byStatus: map[string]uint64{}}
}

// ok records a successful operation of kind k that took d.
func (s *stats) ok(k Kind, d time.Duration) { s.kinds[k].ok.Record(d) }

// fail records a failed operation of kind k.
func (s *stats) fail(k Kind, err error) {
	s.kinds[k].errors.Add(1)
	status, typ := Classify(err)
	st := "none"
	if status != 0 {
		st = strconv.Itoa(status)
	}
	s.mu.Lock()
	s.byType[typ]++
	s.byStatus[st]++
	s.mu.Unlock()
}

// Classify returns the HTTP status (0 when there was no answer) and the
// problem type of err, or for an error without an answer a short class
// such as "transport:connection-refused" or "transport:timeout".
func Classify(err error) (status int, typ string) {
	var p *client.Problem
	switch {
	case errors.As(err, &p):
		if p.Type == "" {
			return p.Status, "(not a problem document)"
		}
		return p.Status, p.Type
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return 0, "transport:timeout"
	case errors.Is(err, context.Canceled):
		return 0, "transport:canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return 0, "transport:connection-refused"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return 0, "transport:connection-reset"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return 0, "transport:connection-closed"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return 0, "transport:timeout"
	}
	return 0, "transport:other"
}

// Latency is a distribution of durations, in milliseconds.
type Latency struct {
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func toMillis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func latencyOf(h *Histogram) Latency {
	return Latency{P50: toMillis(h.Quantile(0.50)), P90: toMillis(h.Quantile(0.90)), P99: toMillis(h.Quantile(0.99)), Max: toMillis(h.Max())}
}

// Operation sums up one kind of operation.
type Operation struct {
	// Count is how many succeeded, Errors how many failed.
	Count  uint64 `json:"count"`
	Errors uint64 `json:"errors"`
	// Rate is Count per second of the run.
	Rate float64 `json:"rate"`
	// Latency is that of the successful ones.
	Latency Latency `json:"latency"`
}

// Errors counts the failed operations of a run two ways.
type Errors struct {
	Total uint64 `json:"total"`
	// ByType is keyed by problem type ("urn:elector:problem:…") or, for a
	// request that got no answer, a class such as "transport:timeout".
	ByType map[string]uint64 `json:"by_type"`
	// ByStatus is keyed by HTTP status, "none" for no answer.
	ByStatus map[string]uint64 `json:"by_status"`
}

// Progress is a snapshot of the counters of a running Load.
type Progress struct {
	Elapsed time.Duration
	// Ops counts the successful operations of each kind so far.
	Ops [numKinds]uint64
	// Errors counts the failed operations of all kinds so far.
	Errors uint64
	// Leaders is how many steady candidates last heard they lead.
	Leaders int64
}

// Count returns the successful operations of kind k so far.
func (p Progress) Count(k Kind) uint64 { return p.Ops[k] }

func (s *stats) progress() (p Progress) {
	for k := range p.Ops {
		p.Ops[k] = s.kinds[k].ok.Count()
		p.Errors += s.kinds[k].errors.Load()
	}
	return p
}

// summary fills the operations and errors of sum from s, over a run of
// elapsed.
func (s *stats) summary(sum *Summary, elapsed time.Duration) {
	sum.Operations = map[string]Operation{}
	for k := range numKinds {
		ks := &s.kinds[k]
		n, e := ks.ok.Count(), ks.errors.Load()
		if n == 0 && e == 0 {
			continue
		}
		op := Operation{Count: n, Errors: e, Latency: latencyOf(&ks.ok)}
		if elapsed > 0 {
			op.Rate = float64(n) / elapsed.Seconds()
		}
		sum.Operations[k.String()] = op
		sum.Errors.Total += e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sum.Errors.ByType = copyMap(s.byType)
	sum.Errors.ByStatus = copyMap(s.byStatus)
}

func copyMap(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sortedKeys returns the keys of m, most frequent first.
func sortedKeys(m map[string]uint64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// formatRate formats a rate with a sensible number of digits.
func formatRate(r float64) string {
	if r >= 100 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}
