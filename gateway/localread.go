package gateway

import "context"

// localReadKey marks a context whose reads of elections may be local.
type localReadKey struct{}

// WithLocalRead returns a context whose reads of elections (Election,
// Elections, LeaderReader.ElectionLeader) a backend may answer from the
// replica's copy as it is, without the read index: no round trip to the
// backend, at the cost of linearizability. Such a read reflects what the
// replica's watch has delivered, which may lag a write acknowledged
// elsewhere by the watch's delay (milliseconds on a healthy backend). A
// backend still serves it linearizably when its copy is not following the
// backend at that moment (its watch is down, moving to another member, or
// the connection is lost): a local read is a permission to skip the read
// index, never an answer from a copy that lost its backend.
//
// Only those three reads honour it. A write never decides on a local
// read: the reads a Gateway write makes drop the mark (linearizable), and
// backends honour it in those three methods alone, not in the reads of a
// write's own checks, heartbeats or their loop. A local answer may name a
// leader that has already lost its leadership, and two local answers from
// two replicas need not be in order (a client may see term 8, then 7 from
// a replica further behind); what makes acting on one safe is what makes
// any answer that can be out of date safe, the fencing term: keep the
// highest seen.
func WithLocalRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, localReadKey{}, true)
}

// LocalRead reports whether ctx allows a local read (WithLocalRead).
func LocalRead(ctx context.Context) bool {
	v, _ := ctx.Value(localReadKey{}).(bool)
	return v
}

// linearizable returns ctx without the mark of WithLocalRead: the context
// of a read that a write decides on.
func linearizable(ctx context.Context) context.Context {
	if LocalRead(ctx) {
		return context.WithValue(ctx, localReadKey{}, false)
	}
	return ctx
}
