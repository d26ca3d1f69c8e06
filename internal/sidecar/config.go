package sidecar

import (
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/electorhq/elector/client"
)

// Defaults of `elector run`, which sets every field of Config.
const (
	DefaultTTL              = 10 * time.Second
	DefaultErrorTimeout     = 10 * time.Second
	DefaultEndRetries       = 12
	DefaultEndRetryInterval = 5 * time.Second
	DefaultChildGrace       = 10 * time.Second
	// DefaultHealthFailures is how many checks in a row must fail before
	// the sidecar counts its application as unhealthy.
	DefaultHealthFailures = 3
)

// Config is what a Sidecar is told. Zero values mean what they say (no
// command, no retries, no grace), except where a field's comment names a
// default.
type Config struct {
	// Console reads LEADER, NOTLEADER and ERROR lines from Stdin instead
	// of campaigning through a gateway; the gateway fields are unused.
	Console bool
	// Gateways are the gateways' URLs, tried in turn; ClientOptions go to
	// each client of them (a user agent, an API token).
	Gateways      []string
	ClientOptions []client.Option

	Election string
	ID       string // this candidate's id
	// TTL is the candidacy's TTL; heartbeats go every TTL/3. DefaultTTL
	// when 0.
	TTL      time.Duration
	Priority int
	Metadata json.RawMessage // a JSON object, or empty

	// Begin, End and OnError are shell command lines run when this
	// candidate becomes leader, stops being leader, and after a failed
	// begin; "" runs nothing.
	Begin, End, OnError string
	// ErrorTimeout is how long to sit out after a failed begin before
	// campaigning again; 0: no timeout.
	ErrorTimeout time.Duration
	// EndRetries is how often a failing end command is retried, every
	// EndRetryInterval, before Run returns ErrEndFailed.
	EndRetries       int
	EndRetryInterval time.Duration
	// CommandTimeout kills a begin, end or error command that runs longer;
	// 0: no limit.
	CommandTimeout time.Duration

	// Command is the program (and its arguments) kept running while this
	// candidate leads, in its own process group under a guard process
	// (this binary run as GuardCommand); none when empty. ChildGrace is
	// how long it gets to exit after SIGTERM before SIGKILL.
	Command    []string
	ChildGrace time.Duration

	// HealthCommand (healthy when it exits 0) or HealthURL (healthy on a
	// GET answered 200 to 399) checks the application every TTL/3; at most
	// one of them. HealthFailures checks in a row must fail
	// (DefaultHealthFailures when 0); a check taking longer than
	// HealthTimeout fails (TTL/6 when 0).
	HealthCommand  string
	HealthURL      string
	HealthFailures int
	HealthTimeout  time.Duration

	// Stdin is the console's input; Stdout and Stderr take the output of
	// the commands and of Command.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// UserAgent is sent with the health check's GET.
	UserAgent string
	Logger    *slog.Logger // slog.Default() when nil
}

// New wires the sidecar c describes. It returns an error when the
// candidacy cannot be made from c (client.NewCandidacy says why); the
// command line checks its flags before.
func New(c Config) (*Sidecar, error) {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.HealthFailures == 0 {
		c.HealthFailures = DefaultHealthFailures
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	var src source
	var lastOK func() time.Time
	var alive func() bool
	healthOn := c.HealthCommand != "" || c.HealthURL != ""
	if c.Console {
		src = newConsoleSource(c.Stdin, c.ID, c.ErrorTimeout, log)
	} else {
		gs, err := newGatewaySource(client.CandidacyConfig{
			Gateways:      c.Gateways,
			ClientOptions: c.ClientOptions,
			Election:      c.Election,
			ID:            c.ID,
			TTL:           c.TTL,
			Priority:      c.Priority,
			Metadata:      c.Metadata,
			// Asked to hand over, the sidecar runs its end command first
			// and then hands over (see Sidecar.reconcile).
			ExplicitHandover: true,
			// The candidacy reads 0 as its default; ErrorTimeout 0 means
			// no timeout.
			ErrorTimeout: max(c.ErrorTimeout, time.Nanosecond),
			// The sidecar resigns itself after its end command ran; when
			// it stops because the end command failed, this host may
			// still act as leader, and handing over at once would make
			// two: the candidacy expires by its TTL instead.
			KeepOnExit: true,
			Logger:     log,
		}, healthOn) // with a health check, campaign once it passes
		if err != nil {
			return nil, err
		}
		src, lastOK, alive = gs, gs.lastHeartbeat, gs.alive
	}
	s := &Sidecar{
		src:              src,
		hooks:            &hooks{begin: c.Begin, end: c.End, onError: c.OnError, timeout: c.CommandTimeout, stdout: c.Stdout, stderr: c.Stderr},
		election:         c.Election,
		id:               c.ID,
		endRetries:       c.EndRetries,
		endRetryInterval: c.EndRetryInterval,
		log:              log.With(slog.String("election", c.Election), slog.String("candidate", c.ID)),
		baseLog:          log,
	}
	if len(c.Command) > 0 {
		s.child = &child{argv: c.Command, grace: c.ChildGrace, stdout: c.Stdout, stderr: c.Stderr}
	}
	if healthOn {
		timeout := c.HealthTimeout
		if timeout == 0 {
			timeout = c.TTL / 6
		}
		s.health = &healthCheck{command: c.HealthCommand, url: c.HealthURL, interval: c.TTL / 3, timeout: timeout,
			failures: c.HealthFailures, env: hookEnv{election: c.Election, candidate: c.ID}, userAgent: c.UserAgent, log: s.log}
	}
	s.status = newStatus(c.Election, c.ID, lastOK)
	s.status.sourceAlive = alive
	if healthOn {
		s.status.withHealth()
	}
	return s, nil
}
