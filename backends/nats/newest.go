package nats

import (
	"context"
	"errors"
	"math"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// maxLookBack bounds how many records lookBack reads to find the newest
// event before a "<seq>" newest.
const maxLookBack = 64

// noteNewest moves newest over the record at seq, the next one the watch
// delivered after seen (s, if ok; a record that does not decode shows no
// event to any watch either). Callers hold r.mu.
//
// Records with events make their last event the newest. A record without
// any leaves newest where it was only if it directly follows seen: records
// the watch skipped (the load delivers the latest record of each election
// only; a lagging watch finds older records dropped) may have had events,
// so newest becomes "<seq>", after all of them. So does the record that
// makes the stream drop the one newest is in (History later records of its
// election), since a watch cannot start from a record no longer held.
func (r *reconciler) noteNewest(seq uint64, s stored, ok bool) {
	if ok && s.nev > 0 {
		r.newest = gateway.Position{Rev: seq, Index: s.nev}
		r.newestOf, r.newestAfter = s.rec.Name, 0
		return
	}
	if ok && s.rec.Name == r.newestOf {
		r.newestAfter++
	}
	if seq != r.seen+1 || r.newestAfter >= r.b.cfg.History {
		r.newest = gateway.Position{Rev: seq, Index: math.MaxInt}
		r.newestOf, r.newestAfter = "", 0
	}
}

// newestCursor returns the cursor of s, a record the view gave after it
// had delivered up to a read index, capped at newest: a record without
// events (a change of settings) has a cursor ("<seq>-0") past the newest
// event, which Head would not reach. Events of s's election after newest
// are the same as after its own cursor: none lies between the two, as
// newest is not before s's own events and no event at all lies after
// newest up to seen. A record ahead of seen (written here) keeps its own.
func (r *reconciler) newestCursor(s stored) stored {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.seq <= r.seen && r.newest.Compare(s.position()) < 0 {
		p := r.newest
		s.capped = &p
	}
	return s
}

// head returns newest, once the view has caught up with a read index.
func (r *reconciler) head() gateway.Position {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.newest
}

// lookBack replaces a "<seq>" newest of r, which the view could not name
// (noteNewest), with the id of the last event the stream holds before it,
// reading back from the view's seen through at most maxLookBack records,
// so that a hub that got that event is caught up (a replica whose view
// loaded after the last write with events). It stops, leaving newest as
// it is (and not trying that newest again), at a record the stream no
// longer holds, whose events it cannot know; NATS errors and a view that
// moves meanwhile leave it for the next read. Every record between the
// event found and seen was read and had none, so no event lies after it.
func (b *Backend) lookBack(ctx context.Context, r *reconciler) {
	r.mu.Lock()
	p, seen, tried := r.newest, r.seen, r.lookedBack
	r.mu.Unlock()
	if p.Index != math.MaxInt || p.Rev == 0 || tried == p.Rev {
		return
	}
	found := gateway.Position{Index: math.MaxInt} // "0": no event at all
	var of string
	names := map[string]int{} // records of each election after the event found
	for seq := seen; seq > 0; seq-- {
		if seen-seq >= maxLookBack {
			r.giveUp(p)
			return
		}
		m, err := b.getRecord(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			r.giveUp(p)
			return
		}
		if err != nil {
			return
		}
		name := b.electionOf(m.Subject)
		s, err := decode(name, seq, m.Data)
		if err != nil {
			continue // no watch shows its events either
		}
		if s.nev > 0 {
			found, of = s.position(), name
			break
		}
		names[name]++
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.newest == p && r.seen == seen {
		r.newest, r.newestOf, r.newestAfter = found, of, names[of]
	}
}

// giveUp marks p as a newest lookBack cannot name.
func (r *reconciler) giveUp(p gateway.Position) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookedBack = p.Rev
}

// getRecord reads the record message at seq.
func (b *Backend) getRecord(ctx context.Context, seq uint64) (*jetstream.RawStreamMsg, error) {
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	return b.records.GetMsg(ctx, seq)
}
