package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// tail reads the messages of a stream that match a filter, in stream
// order and each once, through a server consumer it makes itself and makes
// again, from the message after the last one it returned, whenever that
// consumer is lost: its member restarted or was cut off (no heartbeat for
// two PullHeartbeat intervals), the connection moved to another server,
// the server deleted it, or a delivery came out of order.
//
// It is what jetstream.OrderedConsumer is, with one difference that
// matters after a fault: the ordered consumer makes its server consumer
// again with requests of ten seconds each, backing off up to ten more
// seconds between them, and nobody answers them while the member the
// connection is on is cut off from the others, so a watch on a member
// that rejoined went on up to 20 s after the heal. tail tries every
// tailRetryEvery with requests of at most tailAttempt, so it goes on
// within about tailAttempt of the stream answering again.
//
// Each consumer tail makes is deleted when the next replaces it and when
// tail is closed, so none outlives its reader (one whose deletion could not
// be sent goes when it idles out, consumerIdle). A tail is read by one
// goroutine, which closes it when done; its context may end at any time.
type tail struct {
	b      *Backend
	ctx    context.Context
	stream string
	first  jetstream.ConsumerConfig // the first consumer's; later ones start at next
	prefix string                   // of consumer names: prefix_1, prefix_2, ...
	unlink func() bool
	status chan nats.Status // the connection's reconnections

	serial int
	next   uint64 // the stream sequence after the last message returned; 0 before the first
	dseq   uint64 // the delivery sequence of the last message read from it

	bg    sync.WaitGroup // deletions of consumers given up, which Close waits for
	drops atomic.Int64   // how many consumers were given up after a fault
	// live, when set, says whether the tail has a consumer made and not
	// given up: true once one is made, false from a fault until the next
	// is (a view's following, for local reads).
	live *atomic.Bool

	mu     sync.Mutex
	closed bool
	name   string // the current consumer's, "" while there is none
	it     jetstream.MessagesContext
}

// tailAttempt bounds each request that makes a server consumer again, and
// tailRetryEvery is the mean pause before each. A consumer is made in
// milliseconds on a healthy cluster; a request nobody answers (the member
// is cut off, the stream has no leader) is given up after tailAttempt and
// sent again, so the tail goes on soon after the cluster answers again.
const (
	tailAttempt    = 2 * time.Second
	tailRetryEvery = 250 * time.Millisecond
)

// errTailClosed is what Next returns once ctx has ended or Close was
// called.
var errTailClosed = errors.New("nats: tail closed")

// openTail makes the first server consumer of a tail of stream as cfg
// says (its filter, HeadersOnly, and where to start), bounded by
// OpTimeout. The tail ends when ctx does or when Close is called. Errors
// are those of making the consumer, untranslated.
func (b *Backend) openTail(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (*tail, error) {
	cfg.AckPolicy = jetstream.AckNonePolicy
	cfg.Replicas = 1
	cfg.MemoryStorage = true
	cfg.InactiveThreshold = consumerIdle
	t := &tail{b: b, ctx: ctx, stream: stream, first: cfg, prefix: nuid.Next()}
	octx, cancel := b.opContext(ctx)
	defer cancel()
	// A first consumer made after its request was given up idles out
	// (consumerIdle): the caller is not kept waiting to delete it.
	t.serial = 1
	if err := t.make(octx, t.consumerName()); err != nil {
		return nil, err
	}
	t.unlink = context.AfterFunc(ctx, t.interrupt)
	// After a reconnection the consumer may be gone with the server the
	// connection was on: make it again at once rather than wait out the
	// missing heartbeats. The channel closes in Close.
	t.status = b.nc.StatusChanged(nats.CONNECTED)
	t.bg.Go(func() {
		for range t.status {
			t.mu.Lock()
			if t.it != nil {
				t.it.Stop() // Next finds it stopped, and makes the next consumer
			}
			t.mu.Unlock()
		}
	})
	return t, nil
}

// Next returns the next message and its JetStream metadata, making the
// server consumer again as often as it takes. It returns errTailClosed
// once the tail's context has ended or Close was called,
// jetstream.ErrConnectionClosed once the NATS connection is closed, and
// an error for a delivery without JetStream metadata, which a server does
// not send.
func (t *tail) Next() (jetstream.Msg, *jetstream.MsgMetadata, error) {
	for {
		t.mu.Lock()
		it, closed := t.it, t.closed
		t.mu.Unlock()
		if closed || t.ctx.Err() != nil {
			return nil, nil, errTailClosed
		}
		if it == nil {
			if err := t.remake(); err != nil {
				return nil, nil, err
			}
			continue
		}
		m, err := it.Next()
		if err != nil {
			t.drop(err)
			continue
		}
		md, err := m.Metadata()
		if err != nil {
			// Not dropped: the next consumer would deliver it again.
			return nil, nil, fmt.Errorf("nats: a delivery of stream %s without metadata: %w", t.stream, err)
		}
		if md.Sequence.Consumer != t.dseq+1 {
			t.drop(fmt.Errorf("delivery %d after %d", md.Sequence.Consumer, t.dseq))
			continue
		}
		t.dseq = md.Sequence.Consumer
		t.next = md.Sequence.Stream + 1
		return m, md, nil
	}
}

// Close ends the tail and deletes its server consumers. The reader calls
// it, after its last Next.
func (t *tail) Close() {
	if t.unlink != nil {
		t.unlink()
	}
	if t.status != nil {
		t.b.nc.RemoveStatusListener(t.status)
	}
	t.interrupt()
	t.mu.Lock()
	name := t.name
	t.name = ""
	t.mu.Unlock()
	t.delete(name)
	t.bg.Wait()
}

// interrupt stops the iterator Next may be waiting on, and every later
// Next.
func (t *tail) interrupt() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.it != nil {
		t.it.Stop()
	}
}

// drop gives up the current consumer after err: Next makes the next one.
func (t *tail) drop(err error) {
	if t.live != nil {
		t.live.Store(false)
	}
	t.mu.Lock()
	it, name, closed := t.it, t.name, t.closed
	t.it, t.name = nil, ""
	t.mu.Unlock()
	if it != nil {
		it.Stop()
	}
	if closed || t.ctx.Err() != nil {
		t.delete(name)
		return
	}
	t.drops.Add(1)
	t.b.log.LogAttrs(t.ctx, slog.LevelDebug, "nats: consumer lost, making it again", slog.String("stream", t.stream), slog.String("consumer", name), slog.Uint64("from", t.next), slog.Any("err", err))
	t.bg.Go(func() { t.delete(name) }) // not on the reader's time: the member may not answer
}

// remake makes a server consumer again, trying about every tailRetryEvery
// until one is made, the tail ends or the connection is closed. It pauses
// before the first try too, so that a consumer that fails at once is not
// made again in a busy loop, and with jitter, so that the tails of one
// replica do not all ask at once. Every try asks for the same consumer:
// one made after its request was given up is taken up by the next try
// rather than made twice.
func (t *tail) remake() error {
	t.serial++
	name := t.consumerName()
	tried := false
	for {
		select {
		case <-t.ctx.Done():
		case <-time.After(tailRetryEvery/2 + rand.N(tailRetryEvery)):
		}
		if t.ctx.Err() != nil {
			if tried {
				t.bg.Go(func() { t.delete(name) })
			}
			return errTailClosed
		}
		if t.b.nc.IsClosed() {
			return jetstream.ErrConnectionClosed
		}
		actx, cancel := context.WithTimeout(t.ctx, tailAttempt)
		err := t.make(actx, name)
		cancel()
		tried = true
		if err == nil || errors.Is(err, errTailClosed) {
			return err
		}
	}
}

// consumerName is the name of the tail's current consumer, by its serial.
func (t *tail) consumerName() string { return fmt.Sprintf("%s_%d", t.prefix, t.serial) }

// make makes the server consumer name, from the message after the last one
// returned, and starts pulling from it.
func (t *tail) make(ctx context.Context, name string) error {
	cfg := t.first
	cfg.Name = name
	if t.next > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, t.next
	}
	c, err := t.b.js.CreateConsumer(ctx, t.stream, cfg)
	if err != nil {
		return err
	}
	it, err := c.Messages(append(pullOpts(), jetstream.WithMessagesErrOnMissingHeartbeat(true))...)
	if err != nil {
		t.delete(name)
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		it.Stop()
		t.bg.Go(func() { t.delete(name) })
		return errTailClosed
	}
	t.it, t.name, t.dseq = it, name, 0
	if t.live != nil {
		t.live.Store(true)
	}
	return nil
}

// delete deletes the server consumer name (b.deleteConsumer).
func (t *tail) delete(name string) { t.b.deleteConsumer(t.stream, name) }
