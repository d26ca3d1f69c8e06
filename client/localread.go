package client

import (
	"context"
	"net/url"
)

type localReadKey struct{}

// WithLocalRead returns a context whose reads of elections (Leader,
// Election, Elections, Candidates, Candidate) ask the gateway for a local
// read (consistency=local): the replica answers from its own copy as it
// is, without asking the backend for its latest revision first. It is the
// cheaper read for dashboards and for many clients polling who leads, but
// it may lag a write acknowledged on another replica by the replica's
// watch delay, so it can name a leader that has just lost its leadership:
// act on it only with its fencing term. Other calls ignore it.
func WithLocalRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, localReadKey{}, true)
}

// readQuery is the query string of a read of elections made with ctx.
func readQuery(ctx context.Context) url.Values {
	if local, _ := ctx.Value(localReadKey{}).(bool); local {
		return url.Values{"consistency": {"local"}}
	}
	return nil
}
