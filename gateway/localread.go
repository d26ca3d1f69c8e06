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
// Only reads take it: a write's own reads stay linearizable whatever its
// context says, because the API marks only the contexts of GET requests
// (consistency=local). A local answer may name a leader that has already
// lost its leadership; what makes acting on it safe is the same as for any
// answer that can be out of date by the time it arrives, the fencing term.
func WithLocalRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, localReadKey{}, true)
}

// LocalRead reports whether ctx allows a local read (WithLocalRead).
func LocalRead(ctx context.Context) bool {
	v, _ := ctx.Value(localReadKey{}).(bool)
	return v
}
