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
func (v *view) noteNewest(seq uint64, s stored, ok bool) {
	if ok && s.nev > 0 {
		v.newest = gateway.Position{Rev: seq, Index: s.nev}
		v.newestOf, v.newestAfter = s.rec.Name, 0
		return
	}
	if ok && s.rec.Name == v.newestOf {
		v.newestAfter++
	}
	if seq != v.seen+1 || v.newestAfter >= v.b.cfg.History {
		v.newest = gateway.Position{Rev: seq, Index: math.MaxInt}
		v.newestOf, v.newestAfter = "", 0
	}
}

// newestCursor returns the cursor of s, a record the view gave after it
// had delivered up to a read index, capped at newest: a record without
// events (a change of settings) has a cursor ("<seq>-0") past the newest
// event, which Head would not reach. Events of s's election after newest
// are the same as after its own cursor: none lies between the two, as
// newest is not before s's own events and no event at all lies after
// newest up to seen. A record ahead of seen (written here) keeps its own.
func (v *view) newestCursor(s stored) stored {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s.seq <= v.seen && v.newest.Compare(s.position()) < 0 {
		p := v.newest
		s.capped = &p
	}
	return s
}

// head returns newest, once the view has caught up with a read index.
func (v *view) head() gateway.Position {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.newest
}

// lookBack replaces a "<seq>" newest of v, which the view could not name
// (noteNewest), with the id of the last event the stream holds before it,
// reading back from the view's seen through at most maxLookBack records,
// so that a hub that got that event is caught up (a replica whose view
// loaded after the last write with events). It stops, leaving newest as
// it is (and not trying that newest again), at a record the stream no
// longer holds, whose events it cannot know; NATS errors and a view that
// moves meanwhile leave it for the next read. Every record between the
// event found and seen was read and had none, so no event lies after it.
func (v *view) lookBack(ctx context.Context) {
	b := v.b
	v.mu.Lock()
	p, seen, tried := v.newest, v.seen, v.lookedBack
	v.mu.Unlock()
	if p.Index != math.MaxInt || p.Rev == 0 || tried == p.Rev {
		return
	}
	found := gateway.Position{Index: math.MaxInt} // "0": no event at all
	var of string
	names := map[string]int{} // records of each election after the event found
	for seq := seen; seq > 0; seq-- {
		if seen-seq >= maxLookBack {
			v.giveUp(p)
			return
		}
		m, err := b.getRecord(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			v.giveUp(p)
			return
		}
		if err != nil {
			return
		}
		name := b.subj.electionOf(m.Subject)
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
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.newest == p && v.seen == seen {
		v.newest, v.newestOf, v.newestAfter = found, of, names[of]
	}
}

// giveUp marks p as a newest lookBack cannot name.
func (v *view) giveUp(p gateway.Position) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.lookedBack = p.Rev
}

// getRecord reads the record message at seq, sent again when unanswered
// (resent).
func (b *Backend) getRecord(ctx context.Context, seq uint64) (m *jetstream.RawStreamMsg, err error) {
	err = b.resent(ctx, func(ctx context.Context) error {
		m, err = b.records.GetMsg(ctx, seq)
		return err
	})
	return m, err
}
