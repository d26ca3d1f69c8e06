package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// status is what the sidecar's status server shows: whether it is
// healthy, whether it leads, and its metrics. The reconciler updates it;
// the server reads it. Its methods are safe for concurrent use.
type status struct {
	election, id string
	running      atomic.Bool // the reconciler runs
	sourceAlive  func() bool // the leadership loop runs; nil: as long as the reconciler
	lastOK       func() time.Time

	mu         sync.Mutex
	leading    bool
	term       uint64
	since      time.Time
	leader     string
	appHealthy *bool // the health check's result; nil without one

	healthGauge prometheus.Gauge // nil without a health check

	reg         *prometheus.Registry
	isLeader    prometheus.Gauge
	termGauge   prometheus.Gauge
	transitions *prometheus.CounterVec
	failures    *prometheus.CounterVec
}

func newStatus(election, id string, lastOK func() time.Time) *status {
	s := &status{election: election, id: id, lastOK: lastOK, reg: prometheus.NewRegistry()}
	labels := prometheus.Labels{"election": election, "candidate": id}
	s.isLeader = prometheus.NewGauge(prometheus.GaugeOpts{Name: "elector_sidecar_is_leader", ConstLabels: labels,
		Help: "1 while this sidecar acts as leader (its begin command has run), else 0."})
	s.termGauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "elector_sidecar_term", ConstLabels: labels,
		Help: "The term (fencing token) of this sidecar's current or last leadership."})
	s.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "elector_sidecar_transitions_total", ConstLabels: labels,
		Help: "Leadership transitions of this sidecar: begin, end or error."}, []string{"transition"})
	s.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "elector_sidecar_command_failures_total", ConstLabels: labels,
		Help: "Failed runs of the begin, end and error commands, of the supervised command, and health checks that ended a leadership."}, []string{"command"})
	s.reg.MustRegister(s.isLeader, s.termGauge, s.transitions, s.failures)
	for _, t := range []string{"begin", "end", "error"} {
		s.transitions.WithLabelValues(t)
	}
	if lastOK != nil {
		s.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "elector_sidecar_last_heartbeat_timestamp_seconds", ConstLabels: labels,
			Help: "When the last successful heartbeat was sent, in Unix seconds; 0 before the first."},
			func() float64 {
				t := lastOK()
				if t.IsZero() {
					return 0
				}
				return float64(t.UnixNano()) / 1e9
			}))
	}
	return s
}

// withHealth adds the health check's result to the status: false until
// the first check passes.
func (s *status) withHealth() {
	s.appHealthy = new(bool)
	s.healthGauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "elector_sidecar_healthy",
		ConstLabels: prometheus.Labels{"election": s.election, "candidate": s.id},
		Help:        "1 while the sidecar's health check passes (it campaigns), else 0."})
	s.reg.MustRegister(s.healthGauge)
}

// setHealthy records the health check's result.
func (s *status) setHealthy(v bool) {
	if s.appHealthy == nil {
		return
	}
	s.mu.Lock()
	*s.appHealthy = v
	s.mu.Unlock()
	g := 0.0
	if v {
		g = 1
	}
	s.healthGauge.Set(g)
}

// began records a leadership the begin command has started.
func (s *status) began(term uint64) {
	s.mu.Lock()
	s.leading, s.term, s.since, s.leader = true, term, time.Now(), s.id
	s.mu.Unlock()
	s.isLeader.Set(1)
	s.termGauge.Set(float64(term))
	s.transitions.WithLabelValues("begin").Inc()
}

// ended records the end of a leadership; leader is the new leader as
// heard, or "".
func (s *status) ended(transition, leader string) {
	s.mu.Lock()
	s.leading, s.since, s.leader = false, time.Time{}, leader
	s.mu.Unlock()
	s.isLeader.Set(0)
	s.transitions.WithLabelValues(transition).Inc()
}

// heard records the leader a source named.
func (s *status) heard(leader string) {
	s.mu.Lock()
	s.leader = leader
	s.mu.Unlock()
}

// failed counts a failed command.
func (s *status) failed(command string) {
	s.failures.WithLabelValues(command).Inc()
}

// setRunning says whether the reconciler runs.
func (s *status) setRunning(v bool) {
	s.running.Store(v)
}

// healthy reports whether the reconciler and the leadership loop run.
func (s *status) healthy() bool {
	return s.running.Load() && (s.sourceAlive == nil || s.sourceAlive())
}

// LeaderView is the body of GET /leader.
type LeaderView struct {
	Election  string    `json:"election"`
	Candidate string    `json:"candidate"`
	Leading   bool      `json:"leading"`
	Term      uint64    `json:"term"`
	Since     time.Time `json:"since,omitzero"`
	Leader    string    `json:"leader,omitempty"`
	// Healthy is the health check's result, with one.
	Healthy *bool `json:"healthy,omitempty"`
}

// handler serves /healthz, /leader and /metrics.
func (s *status) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !s.healthy() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not running\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /leader", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		v := LeaderView{Election: s.election, Candidate: s.id, Leading: s.leading, Term: s.term, Since: s.since, Leader: s.leader}
		if s.appHealthy != nil {
			h := *s.appHealthy
			v.Healthy = &h
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	return mux
}

// ServeStatus serves the sidecar's status on addr until stop: GET
// /healthz (200 while Run and its leadership loop run, else 503), GET
// /leader (a LeaderView) and GET /metrics (Prometheus). It returns once
// listening, with a function that stops the server and waits for it.
func (sc *Sidecar) ServeStatus(ctx context.Context, addr string) (stop func(), err error) {
	s, log := sc.status, sc.baseLog
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second}
	log.LogAttrs(ctx, slog.LevelInfo, "status server listening", slog.String("addr", ln.Addr().String()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.LogAttrs(ctx, slog.LevelError, "status server stopped", slog.Any("err", err))
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, nil
}
