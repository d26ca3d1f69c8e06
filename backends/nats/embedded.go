package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/fielderr"
)

// Defaults of an EmbeddedConfig. DefaultDataDir is no default of the
// component (EmbeddedConfig.DataDir is required) but the directory elector
// serve uses unless told another.
const (
	DefaultDataDir      = "elector-data"
	DefaultClusterName  = "elector"
	DefaultReadyTimeout = 10 * time.Second
)

// EmbeddedConfig configures the in-process NATS server that `elector serve`
// runs when no backend is configured. With only DataDir set it is a single
// server with no network listener at all.
type EmbeddedConfig struct {
	// DataDir is where JetStream stores the streams (under DataDir/jetstream).
	// Required: the streams hold the elections' terms, so the directory is
	// one the caller chose, not one the working directory happens to give.
	DataDir string
	// ServerName names this server; it must differ between the members of
	// a cluster and stay the same across restarts. Default "elector-" plus
	// the host name.
	ServerName string
	// Listen is a host:port for NATS clients (port 0 or -1 picks a free
	// one). Default "": no client listener; the backend connects
	// in-process. In a cluster the default is a free port on 127.0.0.1,
	// because nats-server starts routing only after its client listener.
	Listen string
	// ClusterListen is the host:port this server takes routes from other
	// members on. Default "": no cluster.
	ClusterListen string
	// ClusterAdvertise is the host:port the other members are told to
	// route to this server at, when they reach it at another address than
	// ClusterListen (a proxy, NAT, a container's published port). Default:
	// ClusterListen.
	ClusterAdvertise string
	// ClusterName names the JetStream cluster. Default "elector".
	ClusterName string
	// Routes are the other members' cluster addresses ("nats://host:port"
	// or "host:port"). Default none.
	Routes []string
	// ReadyTimeout bounds the server's start. Default 10s.
	ReadyTimeout time.Duration
	// OnWait, if set, is called by OpenEmbedded each time it waits for the
	// cluster, with why it waits (which members are missing, what
	// JetStream answered), so that a caller can report it while it starts.
	// It is called from OpenEmbedded's goroutine. Default none.
	OnWait func(reason string)
}

// Validate reports the first field of cfg that cannot work, as a
// *fielderr.Error wrapping ErrInvalidConfig. It reads no file and opens no
// port: a busy port or an unwritable DataDir is StartEmbedded's error.
func (cfg EmbeddedConfig) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("nats: embedded server: %w", fielderr.Errorf(field, format, args...).Wrap(ErrInvalidConfig))
	}
	switch {
	case strings.TrimSpace(cfg.DataDir) == "":
		// A server started on another directory than the last time starts
		// the streams afresh, and with them the terms it hands out.
		return bad("DataDir", "a directory is required")
	case strings.ContainsFunc(cfg.ServerName, unicode.IsSpace):
		return bad("ServerName", "%q contains a space", cfg.ServerName)
	case strings.ContainsFunc(cfg.ClusterName, unicode.IsSpace):
		return bad("ClusterName", "%q contains a space", cfg.ClusterName)
	case cfg.ReadyTimeout < 0:
		return bad("ReadyTimeout", "%s is negative; 0 takes the default, %s", cfg.ReadyTimeout, DefaultReadyTimeout)
	case len(cfg.Routes) > 0 && cfg.ClusterListen == "":
		return bad("Routes", "needs {ClusterListen}")
	case cfg.ClusterAdvertise != "" && cfg.ClusterListen == "":
		return bad("ClusterAdvertise", "needs {ClusterListen}")
	}
	if a := cfg.ClusterAdvertise; a != "" {
		// The other members dial it: a port to pick is no address.
		if _, port, err := splitHostPort(a); err != nil || port < 1 {
			return bad("ClusterAdvertise", "%q is not a host:port with a port from 1 to 65535", a)
		}
	}
	for _, a := range []struct{ field, addr string }{{"Listen", cfg.Listen}, {"ClusterListen", cfg.ClusterListen}} {
		if a.addr == "" {
			continue
		}
		if _, _, err := splitHostPort(a.addr); err != nil {
			return bad(a.field, "%q is not a host:port (%v)", a.addr, err)
		}
	}
	for _, r := range cfg.Routes {
		if _, err := routeURL(r); err != nil {
			return bad("Routes", "%q is not a host:port or nats://host:port, with a port from 1 to 65535", r)
		}
	}
	return nil
}

// Embedded is a running in-process NATS server with JetStream.
type Embedded struct {
	srv *server.Server
	log *slog.Logger
	// auth lets this process into the system account, in a cluster
	// (handOver); nil otherwise.
	auth *systemAuth
}

// StartEmbedded starts an in-process NATS server as cfg says and waits
// until it accepts connections. Errors: cfg.Validate's, or the server's own
// error when it cannot start (a busy port, an unwritable data dir).
func StartEmbedded(cfg EmbeddedConfig, log *slog.Logger) (*Embedded, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts, err := cfg.serverOptions()
	if err != nil {
		return nil, err
	}
	var auth *systemAuth
	if cfg.ClusterListen != "" {
		auth = newSystemAuth()
		opts.CustomClientAuthentication = auth
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats: embedded server: %w", err)
	}
	if auth != nil {
		auth.srv.Store(srv)
	}
	srv.SetLoggerV2(serverLogger{log.With("component", "nats-server")}, false, false, false)
	srv.Start()
	timeout := cfg.ReadyTimeout
	if timeout == 0 {
		timeout = DefaultReadyTimeout
	}
	if !srv.ReadyForConnections(timeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("nats: embedded server not ready after %s: %w", timeout, gateway.ErrUnavailable)
	}
	return &Embedded{srv: srv, log: log, auth: auth}, nil
}

// serverOptions returns the server's options of cfg, which is valid; its
// errors are Validate's.
func (cfg EmbeddedConfig) serverOptions() (*server.Options, error) {
	name := cfg.ServerName
	if name == "" {
		host, _ := os.Hostname()
		name = "elector-" + host
	}
	listen := cfg.Listen
	if listen == "" && cfg.ClusterListen != "" {
		listen = "127.0.0.1:0"
	}
	opts := &server.Options{
		ServerName: name,
		JetStream:  true,
		StoreDir:   cfg.DataDir,
		NoSigs:     true,
		DontListen: listen == "",
		// fsync every write before it is acknowledged. The file store
		// otherwise syncs every two minutes, and an acknowledged record
		// lost with the machine (power loss, kernel panic) would take its
		// term with it: the next leadership would get a term already
		// handed out. A standalone server's records share their syncs
		// instead (startGroupCommit), still before any is acknowledged.
		// Heartbeats do not pay it: liveness is kept in memory (see
		// "Liveness durability" in the package doc).
		SyncAlways: true,
	}
	if listen != "" {
		host, port, err := splitHostPort(listen)
		if err != nil {
			return nil, fmt.Errorf("%w: listen: %w", ErrInvalidConfig, err)
		}
		opts.Host, opts.Port = host, port
	}
	if cfg.ClusterListen != "" {
		host, port, err := splitHostPort(cfg.ClusterListen)
		if err != nil {
			return nil, fmt.Errorf("%w: cluster listen: %w", ErrInvalidConfig, err)
		}
		opts.Cluster = server.ClusterOpts{Name: cfg.ClusterName, Host: host, Port: port, Advertise: cfg.ClusterAdvertise}
		if opts.Cluster.Name == "" {
			opts.Cluster.Name = DefaultClusterName
		}
		for _, r := range cfg.Routes {
			u, err := routeURL(r)
			if err != nil {
				return nil, fmt.Errorf("%w: route: %w", ErrInvalidConfig, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	return opts, nil
}

// routeURL parses the address of another member of a cluster: host:port,
// or a URL such as nats://host:port.
func routeURL(r string) (*url.URL, error) {
	if !strings.Contains(r, "://") {
		r = "nats://" + r
	}
	u, err := url.Parse(r)
	if err != nil {
		return nil, err
	}
	if port, err := strconv.Atoi(u.Port()); u.Hostname() == "" || err != nil || port < 1 || port > 65535 {
		return nil, errors.New("want a host and a port from 1 to 65535")
	}
	return u, nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < -1 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number from -1 to 65535", p)
	}
	if port == 0 {
		port = -1 // the server's "pick a free port"
	}
	return host, port, nil
}

// Connect opens an in-process connection to the server (no TCP), with the
// reconnect behaviour of a Backend connection.
func (e *Embedded) Connect(log *slog.Logger) (*nats.Conn, error) {
	if log == nil {
		log = slog.Default()
	}
	opts := append(Config{}.withDefaults().natsOptions(log), nats.InProcessServer(e.srv))
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect in-process: %w: %w", gateway.ErrUnavailable, err)
	}
	return nc, nil
}

// lastSeq returns a read of stream's last sequence from this server's own
// store, for a server that is not part of a cluster: there the store is
// the stream's only copy, and a message is acknowledged only once it is
// stored, so the sequence read after a read arrived is at or past that of
// every write acknowledged before. It is the read index that a message get
// of the stream's last message gives, without a request through the
// connection (about 2 µs against 50).
func (e *Embedded) lastSeq(stream string) func() (uint64, error) {
	acc := e.srv.GlobalAccount().Name
	return func() (uint64, error) {
		jsz, err := e.srv.Jsz(&server.JSzOptions{Account: acc, Streams: true})
		if err != nil {
			return 0, fmt.Errorf("nats: read index: %w: %w", gateway.ErrUnavailable, err)
		}
		for _, a := range jsz.AccountDetails {
			for _, st := range a.Streams {
				if st.Name == stream {
					return st.State.LastSeq, nil
				}
			}
		}
		return 0, fmt.Errorf("nats: read index: stream %q: %w: %w", stream, gateway.ErrUnavailable, jetstream.ErrStreamNotFound)
	}
}

// startGroupCommit makes the records of a standalone embedded server
// without a client listener durable in groups (commit.go): this process
// is then the only writer and reader of the records stream, and every
// path by which a record leaves it waits for the record to be on disk.
// With History 1 a new record would drop the durable one before it is on
// disk itself, and without access to the store (storeaccess.go) every
// record is synced on its own, as it is then.
func (b *Backend) startGroupCommit(e *Embedded) {
	if b.cfg.History < 2 {
		return
	}
	store, err := flushedStoreOf(e.srv, b.cfg.Stream)
	if err != nil {
		b.log.LogAttrs(b.ctx, slog.LevelInfo, "nats: records are synced one at a time", slog.Any("reason", err))
		return
	}
	g, err := newGroupCommit(store, b.log, b.ctx.Done())
	if err != nil {
		store.restore()
		b.log.LogAttrs(b.ctx, slog.LevelWarn, "nats: records are synced one at a time", slog.Any("reason", err))
		return
	}
	b.commit = g
	b.localHead = func() (uint64, error) { return g.Durable(), nil }
	b.watchers.Go(g.Run)
}

// OpenEmbedded starts an embedded server as ecfg says and returns a Backend
// over an in-process connection to it; closing the Backend shuts the
// server down. In a cluster (ecfg.Routes set) Replicas defaults to 3 and
// OpenEmbedded waits, until ctx ends, for enough members to create the
// streams: members may start in any order and at any interval, and each
// waits for the others without failing, telling ecfg.OnWait why. Errors as
// StartEmbedded and New, and ctx's error when it ends first.
func OpenEmbedded(ctx context.Context, ecfg EmbeddedConfig, cfg Config, opts ...Option) (*Backend, error) {
	o := newOptions(opts)
	clustered := len(ecfg.Routes) > 0
	if clustered && cfg.Replicas == 0 {
		cfg.Replicas = 3
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e, err := StartEmbedded(ecfg, o.log)
	if err != nil {
		return nil, err
	}
	nc, err := e.Connect(o.log)
	if err != nil {
		e.Shutdown()
		return nil, err
	}
	last := ""
	if clustered && ecfg.OnWait != nil {
		// Until the first attempt has failed, say whom this member reaches.
		ecfg.OnWait(e.waitReason(len(ecfg.Routes), nil))
	}
	for {
		attempt, cancelAttempt := ctx, context.CancelFunc(func() {})
		if clustered {
			attempt, cancelAttempt = context.WithTimeout(ctx, clusterAttemptTimeout)
		}
		b, err := New(attempt, nc, cfg, opts...)
		cancelAttempt()
		if err == nil {
			b.ownConn = true
			b.onClose = e.Shutdown
			if !clustered {
				b.localHead = e.lastSeq(b.cfg.Stream)
				if ecfg.Listen == "" {
					b.startGroupCommit(e)
				}
			}
			if last != "" {
				o.log.Info("nats: the embedded JetStream cluster has formed")
			}
			return b, nil
		}
		if ctx.Err() != nil || !(errors.Is(err, gateway.ErrUnavailable) || clustered && isNoPeers(err)) {
			nc.Close()
			e.Shutdown()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("nats: embedded server: %w", ctx.Err())
			}
			return nil, err
		}
		// Waiting is safe: nothing of any election is read or written
		// until New has created the streams, and JetStream creates them
		// through its meta leader, which a quorum elects.
		reason := e.waitReason(len(ecfg.Routes), err)
		if ecfg.OnWait != nil {
			ecfg.OnWait(reason)
		}
		if reason != last {
			o.log.Info("nats: waiting for the embedded JetStream cluster", slog.String("reason", reason))
			last = reason
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// clusterAttemptTimeout bounds each attempt of a cluster member to create
// the streams. When the last member arrives, every member asks at once, and
// all but one request wait on the first one's proposal until they time
// out; a short attempt asks again soon, and then finds the streams made.
const clusterAttemptTimeout = 2 * time.Second

// isNoPeers reports whether err is JetStream's "no suitable peers for
// placement": the cluster has a meta leader but fewer members than the
// streams' replicas, as while a cluster's members are still starting.
func isNoPeers(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeClusterNoPeers
}

// errCodeClusterNoPeers is JetStream's error code for "no suitable peers
// for placement" (JSClusterNoPeersErrF); nats.go names no constant for it.
const errCodeClusterNoPeers jetstream.ErrorCode = 10005

// waitReason says, for a person, why a member of a cluster with others
// other members is not ready: whom it reaches and, unless err is nil, what
// JetStream said.
func (e *Embedded) waitReason(others int, err error) string {
	said := ""
	if err != nil {
		said = fmt.Sprintf(" (%v)", err)
	}
	if others == 0 {
		return "JetStream is not ready" + said
	}
	connected := e.srv.NumRemotes()
	if connected < others {
		return fmt.Sprintf("connected to %d of the %d other cluster members; waiting for the rest to start%s", connected, others, said)
	}
	return fmt.Sprintf("connected to all %d other cluster members; waiting for JetStream to elect a leader and place the streams%s", others, said)
}

// serverLogger sends the server's log lines to slog.
type serverLogger struct{ log *slog.Logger }

// Noticef logs at debug level: the server's notices (its start-up banner,
// every route and stream change) would drown the gateway's own info lines.
func (l serverLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l serverLogger) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLogger) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLogger) Tracef(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
