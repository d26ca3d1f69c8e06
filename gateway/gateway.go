package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/electorhq/elector/internal/fielderr"
)

// Defaults and bounds of a Gateway's Config.
const (
	DefaultTTL              = 10 * time.Second
	DefaultMinTTL           = time.Second
	DefaultMaxTTL           = time.Hour
	DefaultMaxMetadataBytes = 1024
	// DefaultMaxCandidates and DefaultMaxElections are the caps elector
	// serve applies (a zero Config has none). The election cap is sized
	// to what one replica holds, not below it: on the embedded backend an
	// election of one candidate takes about 3 KiB of resident memory, so a
	// million take about 3 GiB (docs/performance.md).
	DefaultMaxCandidates = 1000
	DefaultMaxElections  = 1_000_000
	// MaxReasonBytes bounds the reason of an error report.
	MaxReasonBytes = 1024
	// MaxSetting bounds error_cooldown and handover_delay.
	MaxSetting = time.Hour
	// MinTTLBound is the smallest MinTTL a Config may set.
	MinTTLBound = time.Millisecond
	// MaxMetadataBytesBound is the largest MaxMetadataBytes a Config may
	// set.
	MaxMetadataBytesBound = 1 << 20
	// MaxIdleElectionExpiry bounds IdleElectionExpiry.
	MaxIdleElectionExpiry = 365 * 24 * time.Hour
	// MaxPriority bounds a candidate's priority, from -MaxPriority to
	// MaxPriority.
	MaxPriority = 1000
)

// Config is the policy a Gateway applies in front of its Backend.
type Config struct {
	// Defaults are the settings of an election created by its first campaign.
	// Zero value: DefaultSettings(). ErrorCooldown and HandoverDelay within
	// [0, MaxSetting], Holders within [0, MaxHolders] (0 means 1; at most
	// the backend's MaxHolders, which Campaign checks).
	Defaults *Settings
	// DefaultTTL is the TTL of a candidate that names none, within
	// [MinTTL, MaxTTL]. Default (0) DefaultTTL.
	DefaultTTL time.Duration
	// MinTTL and MaxTTL bound a candidate's TTL. Default (0) 1s and 1h;
	// MinTTL at least MinTTLBound, MaxTTL at least MinTTL.
	MinTTL, MaxTTL time.Duration
	// MaxMetadataBytes bounds a candidate's metadata, compacted: 2 to
	// MaxMetadataBytesBound. Default (0) 1024.
	MaxMetadataBytes int
	// MaxCandidates caps the candidates of one election; a campaign beyond
	// it fails with a *LimitError (ErrLimit). Default 0: no cap.
	MaxCandidates int
	// MaxElections caps the number of elections; creating one more (by a
	// campaign or Configure) fails with a *LimitError. Default 0: no cap.
	// Both caps are best-effort across replicas (see checkCandidateLimit).
	MaxElections int
	// HubEvents is how many recent events the replica's hub keeps for
	// subscribers to resume from and to read at their own pace; a
	// subscriber further behind is cut off and resumes. Default
	// DefaultHubEvents.
	HubEvents int
	// IdleElectionExpiry deletes an election that has had no candidate and
	// no event for this long (on backends that can delete elections).
	// Default 0: elections are kept until deleted through the API. At most
	// MaxIdleElectionExpiry.
	IdleElectionExpiry time.Duration
	// Logger receives the Gateway's logs. Default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Defaults == nil {
		d := DefaultSettings()
		c.Defaults = &d
	}
	if c.DefaultTTL == 0 {
		c.DefaultTTL = DefaultTTL
	}
	if c.MinTTL == 0 {
		c.MinTTL = DefaultMinTTL
	}
	if c.MaxTTL == 0 {
		c.MaxTTL = DefaultMaxTTL
	}
	if c.MaxMetadataBytes == 0 {
		c.MaxMetadataBytes = DefaultMaxMetadataBytes
	}
	if c.HubEvents == 0 {
		c.HubEvents = DefaultHubEvents
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first field of c that cannot work, as a
// *fielderr.Error wrapping ErrInvalid. A zero TTL bound, default TTL or
// metadata bound takes its default; a zero cap or expiry is off; negative
// values are refused.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("gateway: %w", fielderr.Errorf(field, format, args...).Wrap(ErrInvalid))
	}
	within := func(field string, d, lo, hi time.Duration) error {
		if d < lo || d > hi {
			return bad(field, "%s is outside [%s, %s]", d, lo, hi)
		}
		return nil
	}
	switch {
	case c.MinTTL < MinTTLBound:
		return bad("MinTTL", "%s is below %s", c.MinTTL, MinTTLBound)
	case c.MaxTTL < c.MinTTL:
		return bad("MaxTTL", "%s is below {MinTTL} (%s)", c.MaxTTL, c.MinTTL)
	case c.DefaultTTL < c.MinTTL || c.DefaultTTL > c.MaxTTL:
		return bad("DefaultTTL", "%s is outside {MinTTL} and {MaxTTL} [%s, %s]", c.DefaultTTL, c.MinTTL, c.MaxTTL)
	case c.MaxMetadataBytes < 2 || c.MaxMetadataBytes > MaxMetadataBytesBound:
		return bad("MaxMetadataBytes", "%d is outside [2, %d]", c.MaxMetadataBytes, MaxMetadataBytesBound)
	case c.MaxCandidates < 0:
		return bad("MaxCandidates", "%d is negative; 0 means no limit", c.MaxCandidates)
	case c.MaxElections < 0:
		return bad("MaxElections", "%d is negative; 0 means no limit", c.MaxElections)
	case c.HubEvents < 0:
		return bad("HubEvents", "%d is negative", c.HubEvents)
	}
	for _, err := range []error{
		within("IdleElectionExpiry", c.IdleElectionExpiry, 0, MaxIdleElectionExpiry),
		within("Defaults.ErrorCooldown", c.Defaults.ErrorCooldown, 0, MaxSetting),
		within("Defaults.HandoverDelay", c.Defaults.HandoverDelay, 0, MaxSetting),
	} {
		if err != nil {
			return err
		}
	}
	if h := c.Defaults.Holders; h < 0 || h > MaxHolders {
		return bad("Defaults.Holders", "%d is outside [1, %d]", h, MaxHolders)
	}
	return nil
}

// Gateway is the service the API calls: it validates every input, issues
// candidate tokens, and delegates every decision about leadership to its
// Backend. It holds no election state, so any number of Gateways may share
// one Backend.
type Gateway struct {
	b      Backend // observed by writes
	cfg    Config
	hub    *hub
	writes *writeHealth
	origin string // the backend's head that Begin noted, or ""
	// sessions keeps sessions: the backend, if a Sessioner, else
	// kvSessions, which the Gateway runs over the backend's KV.
	sessions   Sessioner
	kvSessions *sessionsKV
}

// New returns a Gateway over b. It does not check cfg; call cfg.Validate.
// To time b's calls, pass it observed (Observe).
func New(b Backend, cfg Config) *Gateway {
	g := &Gateway{cfg: cfg.withDefaults(), writes: &writeHealth{}}
	g.b = Observe(b, g.writes)
	g.hub = newHub(g.b, g.cfg.Logger, g.cfg.HubEvents)
	if s, ok := nativeSessions(b); ok {
		g.sessions = s
	} else {
		g.kvSessions = &sessionsKV{b: g.b, log: g.cfg.Logger, now: time.Now}
		g.sessions = g.kvSessions
	}
	return g
}

// nativeSessions finds the Sessioner that b is, or wraps, and reports its
// calls to the Observers that wrap it (Observe), as b's other calls are.
func nativeSessions(b Backend) (Sessioner, bool) {
	var observers []Observer // outermost first
	for {
		if s, ok := b.(Sessioner); ok {
			for _, o := range slices.Backward(observers) {
				s = observedSessions{s, o}
			}
			return s, true
		}
		if o, ok := b.(*observed); ok {
			observers = append(observers, o.o)
		}
		u, ok := b.(interface{ Unwrap() Backend })
		if !ok {
			return nil, false
		}
		b = u.Unwrap()
	}
}

// Config returns the Gateway's configuration with defaults filled in.
func (g *Gateway) Config() Config { return g.cfg }

// Begin notes the backend's head as where the transition log of Run
// starts, and returns it as a cursor, for other followers of every
// election (Watch) to start from too. A server calls it once, before it
// serves requests and before Run: then every transition that its
// requests cause reaches the log, which otherwise starts from wherever
// Run finds the backend's head, after the transitions of the requests
// served in between. (The event hub starts when Run does; a subscriber
// from an older cursor reads the backend until it reaches the hub.)
// Errors: the backend's, from its Head; an error once Run has started.
// After an error the Gateway runs as without Begin.
func (g *Gateway) Begin(ctx context.Context) (string, error) {
	if g.hub.running.Load() {
		return "", errors.New("gateway: Begin after Run")
	}
	head, err := g.hub.headPosition(ctx)
	if err != nil {
		return "", err
	}
	g.origin = head.String()
	return g.origin, nil
}

// Run runs the replica's event hub and the backend's background loop,
// and logs every change of leadership it sees at INFO (logTransitions),
// until ctx ends. Watch serves subscribers from the hub while
// Run runs. The log starts from where Begin, if called, noted the
// backend's head, else from where it is when it starts.
func (g *Gateway) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	g.hub.running.Store(true) // from here on, subscribers wait for the hub
	wg.Go(func() { g.hub.run(ctx) })
	if g.cfg.IdleElectionExpiry > 0 {
		wg.Go(func() { g.runIdleSweeper(ctx, g.cfg.IdleElectionExpiry) })
	}
	wg.Go(func() { g.logTransitions(ctx) })
	if g.kvSessions != nil {
		wg.Go(func() { g.kvSessions.runSweeper(ctx) })
	}
	err := g.b.Run(ctx)
	cancel()
	return err
}

// Ready reports whether this replica can serve writes now: the backend
// answers its ping, and this replica's own writes are not failing for
// want of the backend (see writeHealth). Errors wrap ErrUnavailable.
func (g *Gateway) Ready(ctx context.Context) error {
	if err := g.writes.check(time.Now()); err != nil {
		return err
	}
	return g.b.Ping(ctx)
}

// CampaignRequest is a candidate's request to join an election.
type CampaignRequest struct {
	ID       string
	Metadata json.RawMessage // a JSON object or nil
	TTL      time.Duration   // 0 means the Gateway's DefaultTTL
	// Priority orders the line, higher first; 0 by default.
	Priority int
	// Session, if set, puts the candidacy in that session, whose token
	// SessionToken must be: it then lives as long as the session does,
	// with the session's TTL (TTL must be 0), and its token is the
	// session's.
	Session      string
	SessionToken string
}

// Campaign validates r and puts the candidate at the back of the line. It
// returns the candidate's status and its token, which Heartbeat, Resign and
// ReportError require (in a session, the session's). Errors: ErrInvalid
// (a *ValidationError), ErrCandidateExists, ErrLimit (a *LimitError),
// ErrUnavailable; in a session also ErrSessionNotFound, ErrTokenMismatch
// and ErrSessionInElection.
func (g *Gateway) Campaign(ctx context.Context, election string, r CampaignRequest) (Status, string, error) {
	if err := ValidateElectionName(election); err != nil {
		return Status{}, "", err
	}
	if err := ValidateCandidateID(r.ID); err != nil {
		return Status{}, "", err
	}
	ttl := r.TTL
	if r.Session != "" {
		if err := checkSession(r.Session, r.SessionToken); err != nil {
			return Status{}, "", err
		}
		if ttl != 0 {
			return Status{}, "", invalid("ttl", "a candidacy in a session has the session's TTL: leave ttl out")
		}
	} else {
		if ttl == 0 {
			ttl = g.cfg.DefaultTTL
		}
		if err := validateDuration("ttl", ttl, g.cfg.MinTTL, g.cfg.MaxTTL); err != nil {
			return Status{}, "", err
		}
	}
	meta, err := compactObject("metadata", r.Metadata, g.cfg.MaxMetadataBytes)
	if err != nil {
		return Status{}, "", err
	}
	if r.Priority < -MaxPriority || r.Priority > MaxPriority {
		return Status{}, "", invalid("priority", "must be between %d and %d, got %d", -MaxPriority, MaxPriority, r.Priority)
	}
	if err := g.checkHolders(g.cfg.Defaults.HolderLimit()); err != nil {
		return Status{}, "", err
	}
	if err := g.checkCandidateLimit(ctx, election); err != nil {
		return Status{}, "", err
	}
	c := Candidacy{ID: r.ID, Metadata: meta, TTL: ttl, Priority: r.Priority}
	var (
		token string
		undo  func()
	)
	if r.Session == "" {
		token = NewToken()
	} else {
		if sid, ok := sessionOfToken(r.SessionToken); !ok || sid != r.Session {
			return Status{}, "", fmt.Errorf("gateway: campaign %q in session %s: the token is not the session's: %w", r.ID, r.Session, ErrTokenMismatch)
		}
		token = r.SessionToken
		if g.kvSessions != nil {
			// The session's name of the candidacy first (see sessionsKV);
			// the backend sees a candidacy of the session's TTL.
			if c.TTL, undo, err = g.kvSessions.join(ctx, r.Session, HashToken(token), election, r.ID); err != nil {
				return Status{}, "", err
			}
		} else {
			c.Session = r.Session
		}
	}
	c.TokenHash = HashToken(token)
	st, err := g.b.Campaign(ctx, election, c, *g.cfg.Defaults)
	if err != nil {
		if undo != nil && !errors.Is(err, ErrUnavailable) {
			undo()
		}
		return Status{}, "", err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "campaign",
		slog.String("election", election), slog.String("candidate", r.ID),
		slog.String("state", string(st.Candidate.State)), slog.Uint64("term", st.Term))
	return st, token, nil
}

func (g *Gateway) checkCandidate(election, id, token string) error {
	if err := ValidateElectionName(election); err != nil {
		return err
	}
	if err := ValidateCandidateID(id); err != nil {
		return err
	}
	if token == "" {
		return invalid("token", "the candidate token returned by the campaign is required")
	}
	return nil
}

// Heartbeat keeps a candidate alive for another TTL and tells it where it
// stands. A leader asked to hand over is refused with a
// *TransferPendingError and must hand over or stop acting (see
// Record.Transfer). A candidacy in a session renews its whole session (see
// Sessioner); on a backend without sessions of its own that is a
// heartbeat of each of the session's candidacies, after this one's
// answer, whose failure is logged and leaves this one's answer as it is.
// Errors: ErrInvalid, ErrCandidateNotFound (campaign again),
// ErrTokenMismatch, ErrTransferPending, ErrUnavailable.
func (g *Gateway) Heartbeat(ctx context.Context, election, id, token string) (Status, error) {
	if err := g.checkCandidate(election, id, token); err != nil {
		return Status{}, err
	}
	sid, inSession := sessionOfToken(token)
	inSession = inSession && g.kvSessions != nil
	var (
		rec    sessionRecord
		rev    uint64
		recErr error
	)
	if inSession {
		// A candidacy ends with its session: closed, or expired, its
		// heartbeats no longer keep it (a backend whose session is one
		// lease has nothing left to renew).
		rec, rev, recErr = g.kvSessions.record(ctx, sid, HashToken(token))
		if errors.Is(recErr, ErrSessionNotFound) {
			if rerr := g.b.Resign(ctx, election, id, HashToken(token)); rerr != nil && !errors.Is(rerr, ErrCandidateNotFound) && !errors.Is(rerr, ErrElectionNotFound) {
				return Status{}, rerr
			}
			return Status{}, fmt.Errorf("gateway: heartbeat %q of %q: its session has ended (%v): %w", id, election, recErr, ErrCandidateNotFound)
		}
	}
	st, err := g.b.Heartbeat(ctx, election, id, HashToken(token))
	if inSession && err == nil {
		// A candidacy's heartbeat renews its whole session, as on a
		// backend where the session is one lease, from the record read
		// above.
		self := SessionCandidate{Election: election, ID: id, State: st.Candidate.State, Term: st.Term, ExpiresAt: st.Candidate.ExpiresAt}
		kerr := recErr
		if kerr == nil {
			_, kerr = g.kvSessions.keep(ctx, sid, HashToken(token), rec, rev, self)
		}
		if kerr != nil {
			g.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "heartbeat: renew the candidacy's session",
				slog.String("election", election), slog.String("candidate", id), slog.String("session", sid), slog.String("error", kerr.Error()))
		}
	}
	return st, err
}

// CheckToken reports whether token is the token of live candidate id,
// writing nothing: the API checks it before it shows anything that only
// the candidate may see. Errors: ErrInvalid, ErrCandidateNotFound,
// ErrTokenMismatch, ErrUnavailable.
func (g *Gateway) CheckToken(ctx context.Context, election, id, token string) error {
	if err := g.checkCandidate(election, id, token); err != nil {
		return err
	}
	return g.b.CheckToken(ctx, election, id, HashToken(token))
}

// Resign removes a candidate; a leader hands over to the next in line at
// once. Errors as Heartbeat.
func (g *Gateway) Resign(ctx context.Context, election, id, token string) error {
	if err := g.checkCandidate(election, id, token); err != nil {
		return err
	}
	if err := g.b.Resign(ctx, election, id, HashToken(token)); err != nil {
		return err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "resign", slog.String("election", election), slog.String("candidate", id))
	return nil
}

// ReportError puts a candidate in error for the election's cooldown; a
// leader gives up its leadership. Errors as Heartbeat.
func (g *Gateway) ReportError(ctx context.Context, election, id, token, reason string) (Status, error) {
	if err := g.checkCandidate(election, id, token); err != nil {
		return Status{}, err
	}
	if err := validateText("reason", reason, MaxReasonBytes); err != nil {
		return Status{}, err
	}
	st, err := g.b.ReportError(ctx, election, id, HashToken(token), reason)
	if err != nil {
		return Status{}, err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "candidate reported an error",
		slog.String("election", election), slog.String("candidate", id), slog.String("reason", reason))
	return st, nil
}

// Election returns a snapshot of one election. Errors: ErrInvalid,
// ErrElectionNotFound, ErrUnavailable.
func (g *Gateway) Election(ctx context.Context, election string) (Election, error) {
	if err := ValidateElectionName(election); err != nil {
		return Election{}, err
	}
	return g.b.Election(ctx, election)
}

// Elections returns every election, sorted by name, and the cursor of that
// snapshot (see Backend.Elections).
func (g *Gateway) Elections(ctx context.Context) ([]Election, string, error) {
	return g.b.Elections(ctx)
}

// Leader returns the current leader of an election (its longest-standing
// holder; every holder is in the snapshot's Holders when it has more than
// one slot), and the snapshot it read it from; with a LeaderReader backend
// that snapshot has no Candidates. Errors: ErrInvalid, ErrElectionNotFound,
// ErrNoLeader (nobody holds), ErrUnavailable.
func (g *Gateway) Leader(ctx context.Context, election string) (Leader, Election, error) {
	if err := ValidateElectionName(election); err != nil {
		return Leader{}, Election{}, err
	}
	var e Election
	var err error
	if lr, ok := g.b.(LeaderReader); ok {
		e, err = lr.ElectionLeader(ctx, election)
	} else {
		e, err = g.b.Election(ctx, election)
	}
	if err != nil {
		return Leader{}, Election{}, err
	}
	if e.Leader == nil {
		return Leader{}, e, fmt.Errorf("gateway: %q: %w", election, ErrNoLeader)
	}
	return *e.Leader, e, nil
}

// SettingsPatch changes some settings of an election; nil fields stay.
type SettingsPatch struct {
	ErrorCooldown *time.Duration
	HandoverDelay *time.Duration
	Preempt       *bool
	Holders       *int
}

// Configure applies p to the election's settings, creating the election
// with the Gateway's defaults first if it does not exist. Errors:
// ErrInvalid, ErrLimit (a *LimitError, for one election too many),
// ErrNotSupported (holders above the backend's MaxHolders), ErrUnavailable.
//
// Two concurrent Configure calls on one election may lose one of the
// changes (read, merge, write). The other settings never affect who
// leads; holders does, and a lost change of it leaves the holders the
// other call wrote, which the backend applies as any change of holders:
// lowering ends holderships and holds their slots, raising fills slots
// (see Record.Configure), so no loss ever puts more holders to work than
// the setting in force.
func (g *Gateway) Configure(ctx context.Context, election string, p SettingsPatch) (Election, error) {
	if err := ValidateElectionName(election); err != nil {
		return Election{}, err
	}
	s := *g.cfg.Defaults
	e, err := g.b.Election(linearizable(ctx), election)
	switch {
	case err == nil:
		s = e.Settings
	case !errors.Is(err, ErrElectionNotFound):
		return Election{}, err
	default:
		if err := g.checkElectionLimit(ctx); err != nil {
			return Election{}, err
		}
	}
	if p.ErrorCooldown != nil {
		s.ErrorCooldown = *p.ErrorCooldown
	}
	if p.HandoverDelay != nil {
		s.HandoverDelay = *p.HandoverDelay
	}
	if p.Preempt != nil {
		s.Preempt = *p.Preempt
	}
	if p.Holders != nil {
		if *p.Holders < 1 {
			return Election{}, invalid("holders", "must be between 1 and %d, got %d", MaxHolders, *p.Holders)
		}
		s.Holders = *p.Holders
	}
	if err := validateSettings(s); err != nil {
		return Election{}, err
	}
	if err := g.checkHolders(s.HolderLimit()); err != nil {
		return Election{}, err
	}
	e, err = g.b.Configure(ctx, election, s)
	if err != nil {
		return Election{}, err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "election configured", slog.String("election", election),
		slog.Duration("error_cooldown", s.ErrorCooldown), slog.Duration("handover_delay", s.HandoverDelay), slog.Bool("preempt", s.Preempt),
		slog.Int("holders", s.HolderLimit()))
	return e, nil
}

// DeleteElection deletes an election that has no candidate left: it no
// longer counts against MaxElections nor shows in lists and metrics. A
// campaign under the same name creates it again with the Gateway's default
// settings, and its terms continue above the deleted election's (see
// ElectionDeleter). Errors: ErrInvalid, ErrElectionNotFound,
// ErrElectionNotEmpty, ErrUnavailable.
func (g *Gateway) DeleteElection(ctx context.Context, election string) error {
	if err := ValidateElectionName(election); err != nil {
		return err
	}
	if err := g.b.DeleteElection(ctx, election); err != nil {
		return err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "election deleted", slog.String("election", election))
	return nil
}

func validateSettings(s Settings) error {
	if err := validateDuration("error_cooldown", s.ErrorCooldown, 0, MaxSetting); err != nil {
		return err
	}
	if err := validateDuration("handover_delay", s.HandoverDelay, 0, MaxSetting); err != nil {
		return err
	}
	if s.Holders < 0 || s.Holders > MaxHolders { // 0: 1, as stored by older versions
		return invalid("holders", "must be between 1 and %d, got %d", MaxHolders, s.Holders)
	}
	return nil
}

// MaxHolders returns the largest holders setting the Gateway's backend
// takes (MultiHolder), at most MaxHolders.
func (g *Gateway) MaxHolders() int {
	return max(1, min(g.b.MaxHolders(), MaxHolders))
}

// checkHolders returns an *UnsupportedError naming the backend when it
// cannot take n holders.
func (g *Gateway) checkHolders(n int) error {
	if limit := g.MaxHolders(); n > limit {
		ability := "more than one holder"
		if limit > 1 {
			ability = fmt.Sprintf("more than %d holders", limit)
		}
		return &UnsupportedError{Backend: backendName(g.b), Ability: ability}
	}
	return nil
}

// Watch streams events of one election (or all, with election "") after the
// event id after ("" for only new events). Errors: ErrInvalid,
// ErrCursorExpired (take a snapshot and watch from its Cursor),
// ErrUnavailable. The channel closes when ctx ends, when the subscriber
// falls further behind than the hub holds, or when the watch breaks; the
// receiver resumes with the id of the last event it got.
//
// While Run runs, subscribers share the replica's hub (one backend watch
// for all of them); a cursor older than the hub's ring is served by a
// backend watch until it catches up with the ring.
func (g *Gateway) Watch(ctx context.Context, election, after string) (<-chan Event, error) {
	if election != "" {
		if err := ValidateElectionName(election); err != nil {
			return nil, err
		}
	}
	if len(after) > 256 {
		return nil, fmt.Errorf("gateway: event id of %d bytes: %w", len(after), ErrCursorExpired)
	}
	if ch, ok, err := g.hub.subscribe(ctx, election, after); ok {
		return ch, err
	}
	return g.b.Watch(ctx, election, after)
}
