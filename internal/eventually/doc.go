// Package eventually is the one way elector's tests wait for a condition
// that another goroutine, process or replica brings about: poll it until
// it holds, and fail the test naming what was awaited, with the
// condition's last error, when a generous bound passes first.
//
// Tests never sleep and hope; they wait here. The bounds are limits for a
// loaded machine, not expectations: a condition that holds returns at the
// next poll.
package eventually
