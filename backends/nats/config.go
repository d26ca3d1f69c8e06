package nats

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/electorhq/elector/internal/fielderr"
)

// Defaults of a Config.
const (
	DefaultStream        = "ELECTOR"
	DefaultSubjectPrefix = "elector"
	DefaultReplicas      = 1
	DefaultHistory       = 1000
	DefaultMarkerTTL     = time.Minute
	DefaultSweepInterval = 5 * time.Second
	DefaultOpTimeout     = 5 * time.Second
	DefaultConnName      = "elector"
)

// ErrInvalidConfig is wrapped by the errors of a Config that cannot work.
var ErrInvalidConfig = errors.New("nats: invalid config")

// Config says how a Backend reaches NATS and lays out its streams. The zero
// value connects to nats://127.0.0.1:4222 without credentials.
type Config struct {
	// URLs of the NATS servers. Default nats.DefaultURL.
	URLs []string
	// Name of the connection as the server shows it. Default "elector".
	Name string

	// CredsFile is a JWT user credentials file. Default none.
	CredsFile string
	// NKeySeedFile is a file holding an nkey seed. Default none.
	NKeySeedFile string
	// Token authenticates with a token. Default none.
	Token string
	// User and Password authenticate with a user name. Default none.
	User, Password string

	// CAFile is a PEM bundle trusted to sign the servers' certificates.
	// Default: the system roots (TLS is used when a URL says tls://).
	CAFile string
	// CertFile and KeyFile are a client certificate for mutual TLS.
	// Default none.
	CertFile, KeyFile string

	// Stream is the name of the stream holding election records; the
	// liveness stream is named Stream+"_ALIVE", the timers stream
	// Stream+"_TIMERS" and the KV bucket Stream+"_KV". Default "ELECTOR".
	Stream string
	// SubjectPrefix is the first token of every subject the backend uses.
	// Default "elector".
	SubjectPrefix string
	// Replicas of the records and liveness streams and of the KV bucket:
	// 1, or 3 on a JetStream cluster. Default 1.
	Replicas int
	// History is how many records of each election the stream keeps, and so
	// how far back a watcher can resume. Default 1000.
	History int
	// MarkerTTL is how long the server keeps the delete marker it writes
	// when a timer's marker expires, and how long a deleted key's marker
	// stays in the KV bucket. Default one minute.
	MarkerTTL time.Duration
	// SweepInterval is how often Run checks that every candidate still has
	// a liveness message, in case its expiry was missed, and that every
	// running timer still has its marker. Default 5s.
	SweepInterval time.Duration
	// OpTimeout bounds each JetStream request made without a deadline of
	// its own. Default 5s.
	OpTimeout time.Duration
}

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (c Config) withDefaults() Config {
	if len(c.URLs) == 0 {
		c.URLs = []string{nats.DefaultURL}
	}
	if c.Name == "" {
		c.Name = DefaultConnName
	}
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = DefaultSubjectPrefix
	}
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	if c.History == 0 {
		c.History = DefaultHistory
	}
	if c.MarkerTTL == 0 {
		c.MarkerTTL = DefaultMarkerTTL
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = DefaultSweepInterval
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	return c
}

// Validate reports the first field of c that cannot work, as a
// *fielderr.Error wrapping ErrInvalidConfig. A zero field takes its
// default; a negative one is refused.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("nats: %w", fielderr.Errorf(field, format, args...).Wrap(ErrInvalidConfig))
	}
	c = c.withDefaults()
	switch {
	case !tokenRE.MatchString(c.Stream):
		return bad("Stream", "%q: use letters, digits, '_' or '-'", c.Stream)
	case !tokenRE.MatchString(c.SubjectPrefix):
		return bad("SubjectPrefix", "%q: use letters, digits, '_' or '-'", c.SubjectPrefix)
	case c.Replicas != 1 && c.Replicas != 3:
		return bad("Replicas", "%d: use 1, or 3 on a JetStream cluster", c.Replicas)
	case c.History < 1:
		return bad("History", "%d is negative; 0 takes the default, %d", c.History, DefaultHistory)
	case c.MarkerTTL < time.Second:
		return bad("MarkerTTL", "%s is below 1s", c.MarkerTTL)
	case c.SweepInterval < 0:
		return bad("SweepInterval", "%s is negative; 0 takes the default, %s", c.SweepInterval, DefaultSweepInterval)
	case c.OpTimeout < 0:
		return bad("OpTimeout", "%s is negative; 0 takes the default, %s", c.OpTimeout, DefaultOpTimeout)
	case c.CertFile != "" && c.KeyFile == "":
		return bad("CertFile", "needs {KeyFile}")
	case c.KeyFile != "" && c.CertFile == "":
		return bad("KeyFile", "needs {CertFile}")
	case c.Token != "" && c.User != "":
		return bad("Token", "give {Token} or {User}, not both")
	}
	for _, u := range c.URLs {
		if strings.TrimSpace(u) == "" {
			return bad("URLs", "an empty URL")
		}
	}
	return nil
}

// natsOptions turns the connection settings into nats.go options. The
// connection reconnects forever; while it is down every request fails with
// gateway.ErrUnavailable and Ping reports it.
func (c Config) natsOptions(log *slog.Logger) []nats.Option {
	opts := []nats.Option{
		nats.Name(c.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil when the connection is closed on purpose
				log.Warn("nats disconnected", slog.Any("err", err))
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", slog.String("url", nc.ConnectedUrlRedacted()))
		}),
	}
	if c.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	}
	if c.NKeySeedFile != "" {
		if o, err := nats.NkeyOptionFromSeed(c.NKeySeedFile); err == nil {
			opts = append(opts, o)
		} else {
			opts = append(opts, func(*nats.Options) error { return fmt.Errorf("nats: nkey seed: %w", err) })
		}
	}
	if c.Token != "" {
		opts = append(opts, nats.Token(c.Token))
	}
	if c.User != "" {
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.CAFile != "" {
		opts = append(opts, nats.RootCAs(c.CAFile))
	}
	if c.CertFile != "" {
		opts = append(opts, nats.ClientCert(c.CertFile, c.KeyFile))
	}
	return opts
}

// Option configures a Backend beyond its Config.
type Option func(*options)

type options struct {
	log *slog.Logger
	now func() time.Time
}

// WithLogger sets the logger. Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithClock sets the clock the backend stamps transitions with. Default
// time.Now. Liveness is timed by the NATS server, not by this clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}
