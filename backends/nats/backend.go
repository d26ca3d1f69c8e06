package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
	cfg     Config
	subj    subjects // the names of its streams and subjects
	log     *slog.Logger
	now     func() time.Time
	nc      *nats.Conn
	js      jetstream.JetStream
	records jetstream.Stream   // election records and their events
	alive   jetstream.Stream   // candidacies' liveness messages with per-message TTLs, no delete markers
	timers  jetstream.Stream   // timers' markers with per-message TTLs, and the server's delete markers
	kv      jetstream.KeyValue // the gateway.KV, bucket Stream+"_KV"

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

// recordStreamConfig keeps History records per election and never ages
// them out: the latest record of an idle election holds its term, and
// terms must never restart.
func (b *Backend) recordStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              b.cfg.Stream,
		Description:       "elector: election records and their events",
		Subjects:          []string{b.subj.record("*")},
		Storage:           jetstream.FileStorage,
		Replicas:          b.cfg.Replicas,
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgsPerSubject: int64(b.cfg.History),
		DenyDelete:        true,
		DenyPurge:         true,
	}
}

// aliveStreamConfig keeps one liveness message per candidacy. Each message
// carries its candidate's TTL (Nats-TTL), at which the server removes it
// and writes nothing in its place: the stream has no delete markers, whose
// store races heartbeats (see "Liveness" in the package doc), so a message
// leaves it only by its TTL, by a later message on its subject, or by a
// write of this backend. It is kept in memory: a heartbeat waits for no
// disk, and a lost liveness stream costs every candidate one more TTL,
// never a second leader (see "Liveness durability" in the package doc).
func (b *Backend) aliveStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              b.subj.aliveStream(),
		Description:       "elector: candidate liveness, one message per candidacy with its TTL",
		Subjects:          []string{b.subj.alive("*", "*")},
		Storage:           jetstream.MemoryStorage,
		Replicas:          b.cfg.Replicas,
		Retention:         jetstream.LimitsPolicy,
		MaxMsgsPerSubject: 1,
		AllowMsgTTL:       true,
	}
}

// timerStreamConfig keeps one marker per running timer (timers.go) with
// the timer's length as its TTL; when it expires the server writes a
// delete marker, which ends the timer. In memory, like the liveness
// stream: a lost timer runs again whole (sweepTimers).
func (b *Backend) timerStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:                   b.subj.timerStream(),
		Description:            "elector: handover delays, holds and cooldowns, one marker per running timer with its length as TTL",
		Subjects:               []string{b.subj.timer("*", "*")},
		Storage:                jetstream.MemoryStorage,
		Replicas:               b.cfg.Replicas,
		Retention:              jetstream.LimitsPolicy,
		MaxMsgsPerSubject:      1,
		AllowMsgTTL:            true,
		SubjectDeleteMarkerTTL: b.cfg.MarkerTTL,
	}
}

// openAlive creates or updates the liveness stream. One an older version
// made is deleted first: kept on disk (a stream cannot change its
// storage), or writing delete markers (which held the timers too, and
// whose markers could remove an acknowledged heartbeat). The new one
// starts without an epoch, so every recorded candidate is granted a full
// TTL (epochs.grant) before anything is decided on it, and the timers it held
// run again whole on their own stream (sweepTimers).
func (b *Backend) openAlive(ctx context.Context) (jetstream.Stream, error) {
	cfg := b.aliveStreamConfig()
	old, err := b.js.Stream(ctx, cfg.Name)
	switch {
	case err == nil && (old.CachedInfo().Config.Storage != cfg.Storage || old.CachedInfo().Config.SubjectDeleteMarkerTTL != 0):
		b.log.LogAttrs(ctx, slog.LevelInfo, "nats: making the liveness stream again, in memory and without delete markers", slog.String("stream", cfg.Name))
		if err := b.js.DeleteStream(ctx, cfg.Name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, err
		}
	case err != nil && !errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, err
	}
	return b.js.CreateOrUpdateStream(ctx, cfg)
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

// durable returns once the record at seq, which the records stream holds,
// is on disk (groupCommit.Wait); at once when the stream syncs or
// replicates every record before acknowledging it. Errors:
// gateway.ErrUnavailable.
func (b *Backend) durable(ctx context.Context, seq uint64) error {
	if b.commit == nil {
		return nil
	}
	return b.commit.Wait(ctx, seq)
}

// translate maps NATS errors onto the gateway's sentinels: anything that
// means NATS could not be reached, did not answer in time or refused the
// work for lack of room (refusals) is ErrUnavailable.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, gateway.ErrUnavailable):
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount), errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w: %w", gateway.ErrUnavailable, err)
	case errors.As(err, &apiErr) && (apiErr.Code == 503 || slices.Contains(refusals, apiErr.ErrorCode)):
		return fmt.Errorf("%w: %w", gateway.ErrUnavailable, err)
	}
	return err
}

// refusals are the JetStream API errors by which a server declines work it
// has no room for now (too many consumers, no storage or memory left):
// overload, which ends when the load does, so the gateway answers 503 with
// Retry-After rather than 500.
var refusals = []jetstream.ErrorCode{
	10002, // JSAccountResourcesExceededErr
	10023, // JSInsufficientResourcesErr
	jetstream.JSErrCodeMaximumConsumersLimit,
	jetstream.JSErrCodeStreamNotFound, // a stream lost with a restart, until it is made again
	10028,                             // JSMemoryResourcesExceededErr
	10047,                             // JSStorageResourcesExceededErr
}

// isConflict reports whether err is JetStream's compare-and-set failure:
// the subject's last sequence was not the one expected.
func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
