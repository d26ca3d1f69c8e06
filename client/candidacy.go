package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a Candidacy.
const (
	DefaultCandidateTTL = 10 * time.Second
	DefaultErrorTimeout = 10 * time.Second
	// MaxRetryDelay caps the back-off of a candidate whose campaigns fail
	// (the gateway is unreachable, say). A candidate that holds a
	// candidacy retries at least every TTL/3, so that a short outage does
	// not cost it its place in line.
	MaxRetryDelay = 30 * time.Second
)

// Why a Candidacy's Standing changed, as Standing.Reason and the reason
// of OnStoppedLeading say.
const (
	ReasonElected          = "elected"           // a heartbeat (or the campaign) said it leads
	ReasonLost             = "lost"              // a heartbeat said it no longer leads
	ReasonExpired          = "expired"           // the candidacy was gone (404): it campaigns again
	ReasonHeartbeatTimeout = "heartbeat-timeout" // the step-down rule: no heartbeat for TTL minus the margin
	ReasonError            = "error"             // ReportError, or the gateway holds it in error
	ReasonResigned         = "resigned"          // Resign, or Run's context ended
	// ReasonTransferred: the gateway asked the leader to hand over (a
	// transfer or a preemption); it stopped acting, then handed over.
	ReasonTransferred = "transferred"
	// ReasonIDInUse: a campaign was refused because a live candidacy holds
	// the ID (another process campaigning with it, or a previous run's
	// that has not expired); the candidate campaigns again every TTL/3
	// and leads nothing meanwhile.
	ReasonIDInUse = "id-in-use"
)

// Errors of a Candidacy.
var (
	// ErrLeadershipLost is the cause (context.Cause) of the cancellation
	// of the context OnStartedLeading gets; the message names the reason.
	ErrLeadershipLost = errors.New("elector: leadership lost")
	// ErrNotRunning is returned by ReportError when Run is not running.
	ErrNotRunning = errors.New("elector: candidate is not running")
	// ErrAlreadyRunning is returned by a second call of Run.
	ErrAlreadyRunning = errors.New("elector: candidate is already running")
	// ErrInvalidConfig wraps what is wrong with a CandidacyConfig.
	ErrInvalidConfig = errors.New("elector: invalid candidate config")
)

// StepDownMargin is how long before its TTL runs out, counted from when
// its last successful heartbeat was sent, a leader stops acting as leader:
// the larger of TTL/10 and 500ms. See the step-down rule in the package
// documentation.
func StepDownMargin(ttl time.Duration) time.Duration {
	return max(ttl/10, 500*time.Millisecond)
}

// CandidacyConfig configures a Candidacy.
type CandidacyConfig struct {
	// Gateways are the URLs of the gateway's replicas (or of one load
	// balancer in front of them). A request that fails in transport or
	// with a 5xx answer is sent to the next one at once; the one that
	// answered is used from then on, and the candidate's event stream
	// moves there too. A request that one leaves unanswered until its
	// deadline fails, and the next request starts with the next gateway.
	// Required.
	Gateways []string
	// ClientOptions configure the client of each gateway (WithAPIToken,
	// WithUserAgent, …).
	ClientOptions []Option
	// Election is the election to campaign in. Required.
	Election string
	// ID names this candidate; unique in the election. Required.
	ID string
	// TTL is how long the candidacy lives without a heartbeat; heartbeats
	// go every TTL/3. Default DefaultCandidateTTL.
	TTL time.Duration
	// Metadata is a small JSON object shown with the candidate, or nil.
	Metadata json.RawMessage
	// Priority orders the line, higher first; 0 by default. See
	// CampaignRequest.Priority.
	Priority int
	// ExplicitHandover leaves the handover of a transfer to the caller.
	// When the gateway asks this leader to hand over (its heartbeat is
	// refused with ErrTransferPending), the Candidacy stops leading at
	// once (Standing.Reason ReasonTransferred) either way; by default it
	// then waits for OnStartedLeading and OnStoppedLeading to return and
	// hands over itself. With ExplicitHandover the caller stops its own
	// work first and then calls Handover (the sidecar runs its end command
	// in between). Default false.
	ExplicitHandover bool
	// ErrorTimeout is how long a candidate sits out after ReportError
	// before it campaigns again, at the back of the line. Default
	// DefaultErrorTimeout.
	ErrorTimeout time.Duration
	// OnStartedLeading is called, in its own goroutine, when this
	// candidate starts leading, with the term (the fencing token) and a
	// context that is cancelled the moment leadership may be lost: at the
	// step-down deadline at the latest. It should return soon after the
	// context ends. Optional.
	OnStartedLeading func(ctx context.Context, term uint64)
	// OnStoppedLeading is called after a leadership ended and its
	// OnStartedLeading returned, with the term and one of the Reason…
	// constants. Optional.
	OnStoppedLeading func(term uint64, reason string)
	// KeepOnExit leaves the candidacy to expire by its TTL when Run's
	// context ends, instead of resigning it. For callers that resign
	// themselves with Resign when they are done, and want no handover
	// when they stop for another reason (their leader's work may not have
	// stopped). Default false: Run resigns on the way out.
	KeepOnExit bool
	// Logger receives the candidacy's transitions and failures. Default:
	// discard.
	Logger *slog.Logger
}

// Standing is where a Candidacy stands, as its States channel reports it.
type Standing struct {
	// Leading says to act as leader: the gateway confirmed it with a
	// heartbeat, and the step-down deadline has not passed since.
	Leading bool
	// State is the candidate's state at the gateway as last heard, or ""
	// while it holds no candidacy.
	State State
	// Term is the leadership's term while leading, else the last term
	// heard of.
	Term uint64
	// Leader is the id of the current leader as last heard, "" when none
	// or unknown. With several holders (the election's holders setting
	// above 1) it is the longest-standing holder, and Leading says whether
	// this candidate is one of them; Term is then its own holdership's.
	Leader string
	// Holders is how many candidates hold the election as last heard: 1
	// while someone leads an election of one holder, up to its holders
	// setting otherwise; 0 when nobody holds or it is unknown. The list is
	// in the Status of Client.Heartbeat and in Client.Leader.
	Holders int
	// Since is when the current leadership began (while Leading).
	Since time.Time
	// Reason says why the standing changed: one of the Reason… constants.
	Reason string
}

// Candidacy campaigns in an election and keeps its candidacy alive, as
// etcd's concurrency.Session and Election or client-go's leaderelection
// do: it heartbeats every TTL/3, campaigns again when the candidacy is
// gone, obeys the step-down rule, backs off with jitter while the gateway
// is unreachable or asks it to (429, 503, Retry-After), and learns that it
// leads from the election's event stream at once, confirming with a
// heartbeat before it says so. Its methods are safe for concurrent use.
type Candidacy struct {
	cfg     CandidacyConfig
	clients []*Client
	log     *slog.Logger
	now     func() time.Time
	jitter  func() float64

	reqs      chan candidateRequest
	states    chan Standing
	phase     atomic.Int32  // phaseIdle, then phaseRunning or phaseResigned
	done      chan struct{} // closed when Run returns
	gw        atomic.Int32  // index of the gateway in use
	gwChanged chan struct{} // the gateway in use changed: the watch moves
	lastOK    atomic.Int64  // unix nanoseconds of the last successful heartbeat

	mu      sync.Mutex
	current Standing

	// Owned by Run.
	token      string
	leading    bool
	term       uint64
	since      time.Time
	sentOK     time.Time // when the last successful heartbeat (or campaign) was sent
	pauseUntil time.Time // the error timeout: no leadership until then
	resigned   bool
	failures   int  // requests failed in a row
	idInUse    bool // campaigns are refused: a live candidacy holds the ID
	lctx       *leaderCtx
	callbacks  *dispatcher
	// runCtx is Run's context, the parent of every leadership's: once it
	// ends, Run ends the leadership (resigned) and starts none.
	runCtx context.Context

	// onAnswer, a test hook, runs after a heartbeat's answer came and
	// before the candidacy acts on it.
	onAnswer func()
}

// candidateRequest is a ReportError (reason set), a Resign or a Handover,
// and where to answer.
type candidateRequest struct {
	ctx      context.Context
	resign   bool
	handover bool
	reason   string
	done     chan error
}

// NewCandidacy checks cfg and returns a candidate that campaigns once Run
// is called. Errors wrap ErrInvalidConfig.
func NewCandidacy(cfg CandidacyConfig) (*Candidacy, error) {
	if cfg.TTL == 0 {
		cfg.TTL = DefaultCandidateTTL
	}
	if cfg.ErrorTimeout == 0 {
		cfg.ErrorTimeout = DefaultErrorTimeout
	}
	switch {
	case len(cfg.Gateways) == 0:
		return nil, fmt.Errorf("%w: Gateways is empty; give the gateway's URL, such as http://127.0.0.1:8080", ErrInvalidConfig)
	case cfg.Election == "":
		return nil, fmt.Errorf("%w: Election is required", ErrInvalidConfig)
	case cfg.ID == "":
		return nil, fmt.Errorf("%w: ID is required", ErrInvalidConfig)
	case cfg.TTL < time.Second:
		return nil, fmt.Errorf("%w: TTL %s is below 1s", ErrInvalidConfig, cfg.TTL)
	case cfg.ErrorTimeout < 0:
		return nil, fmt.Errorf("%w: ErrorTimeout %s is negative", ErrInvalidConfig, cfg.ErrorTimeout)
	}
	c := &Candidacy{
		cfg:       cfg,
		log:       cfg.Logger,
		now:       time.Now,
		jitter:    rand.Float64,
		reqs:      make(chan candidateRequest),
		states:    make(chan Standing, 1),
		done:      make(chan struct{}),
		gwChanged: make(chan struct{}, 1),
	}
	if c.log == nil {
		c.log = slog.New(discard{})
	}
	c.log = c.log.With(slog.String("election", cfg.Election), slog.String("candidate", cfg.ID))
	for _, g := range cfg.Gateways {
		cl := New(g, cfg.ClientOptions...)
		if cl.BaseURL() == "" {
			return nil, fmt.Errorf("%w: gateway %q is not an absolute http(s) URL", ErrInvalidConfig, g)
		}
		c.clients = append(c.clients, cl)
	}
	return c, nil
}

// States returns the channel of the candidate's standings. It holds the
// latest one: a standing the reader has not taken yet is replaced by a
// newer one, so the reader always acts on the latest and never slows the
// candidate down. It closes when Run returns.
func (c *Candidacy) States() <-chan Standing { return c.states }

// Standing returns the candidate's latest standing.
func (c *Candidacy) Standing() Standing {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}

// LastHeartbeat is when the last successful heartbeat (or campaign) was
// sent, or the zero time.
func (c *Candidacy) LastHeartbeat() time.Time {
	ns := c.lastOK.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// The phases of a Candidacy: Run and a Resign before it race for the
// first move, so that a Resign that returned is never followed by a
// campaign.
const (
	phaseIdle     int32 = iota // neither Run nor Resign yet
	phaseRunning               // Run was called (it may have returned since)
	phaseResigned              // Resign came first: Run will not campaign
)

// Running reports whether Run is running.
func (c *Candidacy) Running() bool {
	select {
	case <-c.done:
		return false
	default:
		return c.phase.Load() == phaseRunning
	}
}

// Resign ends the candidacy for good: a leader stops leading (its context
// is cancelled and OnStoppedLeading called) and the gateway hands over to
// the next in line at once; then Run returns nil. Called before Run, it
// ends the candidacy before it begins: Run then returns nil at once,
// without campaigning. After Run returned it does nothing. It returns the
// error of the resign request, or ctx's.
func (c *Candidacy) Resign(ctx context.Context) error {
	if c.phase.CompareAndSwap(phaseIdle, phaseResigned) {
		return nil
	}
	return c.request(ctx, candidateRequest{resign: true}, nil)
}

// ReportError tells the gateway that this candidate cannot lead (its work
// failed to start, say): it stops leading, the gateway hands over to the
// next in line, and after ErrorTimeout the candidate campaigns again at the
// back of the line. reason is shown in the leader.error event; it must not
// carry secrets.
//
// Errors: ErrNotRunning, the report's error (the candidacy was then
// resigned instead, which hands over as well), or ctx's.
func (c *Candidacy) ReportError(ctx context.Context, reason string) error {
	return c.request(ctx, candidateRequest{reason: reason}, ErrNotRunning)
}

// Handover hands the leadership over to the target of the pending
// transfer, for a caller that set ExplicitHandover: call it once the
// leader's work has stopped, after the Standing with ReasonTransferred.
// The candidate stays in line as a follower.
//
// Errors: ErrNotRunning, ErrNoTransfer or ErrNotLeader (the transfer was
// cancelled or completed meanwhile; the next heartbeat tells where the
// candidate stands), the request's error, or ctx's.
func (c *Candidacy) Handover(ctx context.Context) error {
	return c.request(ctx, candidateRequest{handover: true}, ErrNotRunning)
}

// request sends r to Run and waits for its answer; idle is the answer
// when Run is not running.
func (c *Candidacy) request(ctx context.Context, r candidateRequest, idle error) error {
	r.ctx, r.done = ctx, make(chan error, 1)
	if c.phase.Load() != phaseRunning {
		return idle
	}
	select {
	case c.reqs <- r:
	case <-c.done:
		return idle
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.done
}

// Observe follows the leader of the candidate's election through the
// gateway in use; see Client.Observe.
func (c *Candidacy) Observe(ctx context.Context) (<-chan Leader, error) {
	return c.clients[c.gw.Load()].Observe(ctx, c.cfg.Election)
}

// Run campaigns and keeps the candidacy alive until ctx ends or Resign is
// called. When ctx ends, a leader stops leading and the candidacy is
// resigned (unless KeepOnExit), so the next candidate leads at once. Run returns after the
// callbacks have returned and States has closed: nil, ErrAlreadyRunning,
// or an error the gateway will keep answering (ErrInvalidRequest for a bad
// election name, id or metadata; ErrUnauthenticated; ErrForbidden). After
// a Resign that came first it returns nil at once, States closed, having
// sent nothing to the gateway.
func (c *Candidacy) Run(ctx context.Context) error {
	if !c.phase.CompareAndSwap(phaseIdle, phaseRunning) {
		if c.phase.Load() == phaseResigned && c.phase.CompareAndSwap(phaseResigned, phaseRunning) {
			close(c.states)
			close(c.done)
			return nil
		}
		return ErrAlreadyRunning
	}
	defer close(c.done)
	c.runCtx = ctx
	c.callbacks = newDispatcher()
	go c.callbacks.run()
	wctx, stopWatch := context.WithCancel(ctx)
	pokes := make(chan struct{}, 1)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		c.watch(wctx, pokes)
	}()

	err := c.loop(ctx, pokes)

	stopWatch()
	<-watchDone
	c.lose(ReasonResigned)
	if !c.resigned && !c.cfg.KeepOnExit {
		c.resign(context.WithoutCancel(ctx))
	}
	c.callbacks.close()
	close(c.states)
	return err
}
