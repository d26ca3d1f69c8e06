package sidecar

import "context"

// observation is what a source learned of this candidate's standing. The
// reconciler acts on the latest one.
type observation struct {
	leading bool
	term    uint64 // the leadership's term while leading
	leader  string // the current leader's id, "" when unknown or none
	reason  string // why the standing changed: ELECTOR_REASON
	errored bool   // the source says the candidate is in error (console ERROR)
}

// source tells the reconciler whether this candidate leads: the gateway
// (campaign and heartbeats) or, for trying handlers out, the console.
type source interface {
	// Run sends observations on out until ctx ends. A source whose input
	// ends (the console's stdin) returns nil early: the sidecar then
	// shuts down.
	Run(ctx context.Context, out chan observation) error
	// Fail says this candidate cannot lead (its begin command failed): it
	// gives up leadership and sits out the error timeout.
	Fail(ctx context.Context, reason string) error
	// Resign ends the candidacy for good; Run campaigns no more.
	Resign(ctx context.Context) error
}

// handoverer is a source that can hand leadership over to the target of a
// pending transfer (the gateway); the sidecar calls it after its end
// command, when the source stopped leading with reason transferred.
type handoverer interface {
	Handover(ctx context.Context) error
}

// pauser is a source that can stop campaigning while the application is
// unhealthy (the gateway: it resigns its candidacy) and campaign again
// once it is healthy.
type pauser interface {
	// Pause leaves the line; it returns the resignation's error.
	Pause(ctx context.Context) error
	// Resume campaigns again, at the back of the line.
	Resume()
}

// acker is a source that wants to know when the reconciler has acted on
// each observation (the console, whose every line counts).
type acker interface{ processed() }

// offer puts v in out, a channel of capacity 1 that only the caller
// writes, replacing a value the reconciler has not taken yet: the
// reconciler acts on the latest standing (or health), and a source must
// never block on a reconciler busy running a command.
func offer[T any](out chan T, v T) {
	for {
		select {
		case out <- v:
			return
		default:
		}
		select {
		case <-out:
		default:
		}
	}
}
