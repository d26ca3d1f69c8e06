package nats

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// Backend is a gateway.Backend over NATS JetStream. Create it with Connect,
// New or OpenEmbedded; all methods are safe for concurrent use.
type Backend struct {
	cfg  Config
	subj subjects // the names of its streams and subjects
	log  *slog.Logger
	now  func() time.Time
	nc   *nats.Conn
	// request sends a publish and waits for its acknowledgement:
	// nc.RequestMsg, unless a test loses answers.
	request func(m *nats.Msg, timeout time.Duration) (*nats.Msg, error)
	// call sends a JetStream API request the jetstream package would
	// answer without its error code (deleteMsg): nc.RequestMsgWithContext,
	// unless a test loses answers.
	call func(ctx context.Context, m *nats.Msg) (*nats.Msg, error)
	// answerWait is how long a request to a stream's leader waits for its
	// answer before it is sent again, doubling each time (resend.go); 0,
	// never, on streams of one replica, whose leader does not change.
	answerWait time.Duration
	js         jetstream.JetStream
	records    jetstream.Stream   // election records and their events
	alive      jetstream.Stream   // candidacies' liveness messages with per-message TTLs, no delete markers
	timers     jetstream.Stream   // timers' markers with per-message TTLs, and the server's delete markers
	kv         jetstream.KeyValue // the gateway.KV, bucket Stream+"_KV"
	kvStream   jetstream.Stream   // the KV bucket's stream, for List's reads from its leader

	ownConn  bool            // Close closes nc
	onClose  func()          // extra cleanup, such as an embedded server's shutdown
	ctx      context.Context // ends when the backend is closed
	cancel   context.CancelFunc
	closeMu  sync.Mutex
	closed   bool
	watchers sync.WaitGroup

	epochs *epochs // the liveness stream's epoch (epoch.go)

	live *liveness // what this replica knows of liveness subjects (liveness.go)

	runsMu sync.Mutex
	runs   map[*view]struct{} // the views of running Run calls
	// feedable is closed, and replaced, whenever a view becomes able to
	// feed watches (view.noteFeedableLocked): a watch reading from a tail
	// of its own then moves onto the view's feed (watch.go, adopt).
	feedMu   sync.Mutex
	feedable chan struct{}

	readIndex *gateway.ReadIndex // the records stream's last sequence, for reads from the view
	// localHead, when set, reads that sequence from the server's own
	// store: an embedded server outside a cluster (Embedded.lastSeq, or
	// the group commit's durable sequence).
	localHead func() (uint64, error)
	// commit, when set, makes records durable in groups (commit.go): a
	// standalone embedded server without a listener. Nil: every record is
	// on disk (or replicated) before the server acknowledges it.
	commit *groupCommit

	lease *quorumLease // the records stream's leader had its quorum (quorum.go)

	writes writeQueues // each election's transitions waiting to write (combine.go)

	lost atomic.Uint64 // cursors below this sequence are expired: a watch found records dropped after them (watchGap)
}

var (
	_ gateway.Backend = (*Backend)(nil)
	_ gateway.Runner  = (*Backend)(nil)
	_ gateway.Pinger  = (*Backend)(nil)
	_ gateway.Header  = (*Backend)(nil)

	_ gateway.ElectionCounter  = (*Backend)(nil)
	_ gateway.LeaderReader     = (*Backend)(nil)
	_ gateway.CandidateCounter = (*Backend)(nil)
)

// Connect dials NATS as cfg says and returns a Backend that owns the
// connection. Errors: ErrInvalidConfig, gateway.ErrUnavailable when NATS or
// JetStream cannot be reached.
func Connect(ctx context.Context, cfg Config, opts ...Option) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := newOptions(opts)
	cfg = cfg.withDefaults()
	nc, err := nats.Connect(strings.Join(cfg.URLs, ","), cfg.natsOptions(o.log)...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect: %w: %w", gateway.ErrUnavailable, err)
	}
	b, err := New(ctx, nc, cfg, opts...)
	if err != nil {
		nc.Close()
		return nil, err
	}
	b.ownConn = true
	return b, nil
}

// New returns a Backend over an existing connection, creating or updating
// its streams and its KV bucket. The caller keeps ownership of nc. Errors
// as Connect.
func New(ctx context.Context, nc *nats.Conn, cfg Config, opts ...Option) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := newOptions(opts)
	cfg = cfg.withDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("nats: jetstream: %w: %w", gateway.ErrUnavailable, err)
	}
	b := &Backend{
		cfg: cfg, subj: subjects{stream: cfg.Stream, prefix: cfg.SubjectPrefix}, log: o.log, now: o.now, nc: nc, js: js,
		lease: newQuorumLease(), live: newLiveness(cfg.SubjectPrefix),
	}
	b.request, b.call = nc.RequestMsg, nc.RequestMsgWithContext
	if cfg.Replicas > 1 {
		b.answerWait = answerWait
	}
	b.epochs = &epochs{b: b}
	b.readIndex = gateway.NewReadIndex(b.fetchHead)
	b.ctx, b.cancel = context.WithCancel(context.Background())
	parent := ctx
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	if b.records, err = js.CreateOrUpdateStream(ctx, b.recordStreamConfig()); err != nil {
		b.cancel()
		return nil, fmt.Errorf("nats: stream %s: %w", cfg.Stream, translate(err))
	}
	if b.alive, err = b.openAlive(ctx); err != nil {
		b.cancel()
		return nil, fmt.Errorf("nats: stream %s: %w", b.subj.aliveStream(), translate(err))
	}
	if b.timers, err = js.CreateOrUpdateStream(ctx, b.timerStreamConfig()); err != nil {
		b.cancel()
		return nil, fmt.Errorf("nats: stream %s: %w", b.subj.timerStream(), translate(err))
	}
	if err := b.epochs.grant(parent); err != nil { // each of its requests bounded by OpTimeout
		b.cancel()
		return nil, err
	}
	if err := b.openKV(ctx); err != nil {
		b.cancel()
		return nil, fmt.Errorf("nats: kv bucket %s: %w", b.subj.kvBucket(), err)
	}
	return b, nil
}

func newOptions(opts []Option) options {
	o := options{log: slog.Default(), now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// opContext bounds ctx by OpTimeout unless it has an earlier deadline.
func (b *Backend) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= b.cfg.OpTimeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, b.cfg.OpTimeout)
}

// connected fails fast with gateway.ErrUnavailable while the connection is
// down or reconnecting, instead of letting a request wait out its timeout.
func (b *Backend) connected() error {
	if s := b.nc.Status(); s != nats.CONNECTED {
		return fmt.Errorf("%w: nats connection %s", gateway.ErrUnavailable, s)
	}
	return nil
}

// Ping reports whether the backend can serve writes now: connected to NATS
// and able to reach the leaders of the streams writes go through, the
// records stream, the liveness stream and the timers stream (a campaign
// writes the first two, a heartbeat the liveness stream, a transition that
// starts a timer the third). On a cluster each has its own leader: a
// member that led only the liveness stream can be gone while the records
// stream answers, and every heartbeat then times out until the others
// elect a new one. It also refuses a liveness stream that writes delete
// markers (an older version's layout, or one changed by hand): its expiries
// could not be trusted (see "Liveness" in the package doc). Errors:
// gateway.ErrUnavailable.
func (b *Backend) Ping(ctx context.Context) error {
	if b.isClosed() {
		return fmt.Errorf("nats: ping: backend closed: %w", gateway.ErrUnavailable)
	}
	if err := b.connected(); err != nil {
		return fmt.Errorf("nats: ping: %w", err)
	}
	for _, s := range []struct {
		stream jetstream.Stream
		name   string
	}{{b.records, b.cfg.Stream}, {b.alive, b.subj.aliveStream()}, {b.timers, b.subj.timerStream()}} {
		ictx, cancel := b.opContext(ctx)
		info, err := s.stream.Info(ictx)
		cancel()
		if err != nil {
			return fmt.Errorf("nats: ping: stream %s: %w", s.name, translate(err))
		}
		if s.stream == b.alive && info.Config.SubjectDeleteMarkerTTL != 0 {
			return fmt.Errorf("nats: ping: stream %s writes delete markers (subject_delete_marker_ttl %s), which can remove an acknowledged heartbeat: "+
				"it was made or changed by another version; stop every replica of the older version and restart this one, which makes it again: %w",
				s.name, info.Config.SubjectDeleteMarkerTTL, gateway.ErrUnavailable)
		}
		if b.cfg.Replicas == 1 {
			continue
		}
		// A member cut off from the others still answers the stream info
		// itself while it thinks it leads: ready only if its leader hears
		// from a quorum (quorum.go), as reads and writes require.
		heard, err := quorumSilence(info.Cluster, s.name)
		if err != nil {
			return fmt.Errorf("nats: ping: %w", err)
		}
		if heard >= minElection {
			return fmt.Errorf("nats: ping: the leader of stream %s last heard from a quorum of its replicas %s ago: %w",
				s.name, heard.Round(time.Millisecond), gateway.ErrUnavailable)
		}
	}
	return nil
}

// Close stops the backend's watches, waits for them, closes the connection
// if the backend opened it and shuts an embedded server down. It is safe to
// call more than once.
func (b *Backend) Close() error {
	b.closeMu.Lock()
	if b.closed {
		b.closeMu.Unlock()
		return nil
	}
	b.closed = true
	b.cancel()
	b.closeMu.Unlock()
	b.watchers.Wait()
	if b.ownConn {
		b.nc.Close()
	}
	if b.onClose != nil {
		b.onClose()
	}
	return nil
}

func (b *Backend) isClosed() bool { return b.ctx.Err() != nil }
