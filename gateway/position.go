package gateway

import (
	"cmp"
	"math"
	"strconv"
	"strings"
)

// Position is a point in a backend's event stream, parsed from an event id
// or a snapshot cursor. Every backend writes ids and cursors in one of two
// forms, and they order as the pair (Rev, Index):
//
//	"<rev>-<index>"  the index-th event (from 1) of the write at rev;
//	                 "<rev>-0" is just before the first event of rev
//	"<rev>"          just after every event of the write at rev
//
// rev is a number that grows with every write of the backend (a stream
// sequence, a store revision, a counter), so positions of one backend order
// as its events do, whichever replica issued them. The hub relies on this
// to tell whether a cursor is already covered by the events it holds.
//
// Numbers are written in decimal without leading zeros, so that one
// position has one spelling: backends make ids and cursors with String
// (or After), and read them back with ParsePosition, which refuses any
// other spelling.
type Position struct {
	Rev   uint64
	Index int // math.MaxInt for "<rev>"
}

// After is the position "<rev>", just after every event of the write at
// rev: a snapshot's cursor, or the id of a write's only event where every
// write has one.
func After(rev uint64) Position { return Position{Rev: rev, Index: math.MaxInt} }

// ParsePosition parses an event id or a cursor; ok is false for anything
// not in the forms above, leading zeros included.
func ParsePosition(s string) (p Position, ok bool) {
	r, i, hasIndex := strings.Cut(s, "-")
	if !digits(r) || (hasIndex && !digits(i)) {
		return Position{}, false
	}
	rev, err := strconv.ParseUint(r, 10, 64)
	if err != nil {
		return Position{}, false
	}
	p = Position{Rev: rev, Index: math.MaxInt}
	if hasIndex {
		n, err := strconv.Atoi(i)
		if err != nil {
			return Position{}, false
		}
		p.Index = n
	}
	return p, true
}

// digits reports whether s is a decimal number as String writes it: a
// non-empty run of ASCII digits without a leading zero (but "0").
func digits(s string) bool {
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Compare returns -1, 0 or +1 as p is before, at or after q.
func (p Position) Compare(q Position) int {
	return cmp.Or(cmp.Compare(p.Rev, q.Rev), cmp.Compare(p.Index, q.Index))
}

// String returns the position in the form it was parsed from.
func (p Position) String() string {
	if p.Index == math.MaxInt {
		return strconv.FormatUint(p.Rev, 10)
	}
	return strconv.FormatUint(p.Rev, 10) + "-" + strconv.Itoa(p.Index)
}
