// Package client is a Go client for elector's HTTP API v1: campaign,
// heartbeat, resign and report errors as a candidate, read the leader and
// the line of candidates, and follow an election's events over
// Server-Sent Events with automatic resumption.
//
// A candidate campaigns once, keeps the token the campaign returns, and
// heartbeats within its TTL (TTL/3 is the advice). The heartbeat's answer
// says whether it leads:
//
//	c := client.New("http://127.0.0.1:8080")
//	st, token, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-a", TTL: 6 * time.Second})
//	...
//	st, err = c.Heartbeat(ctx, "billing", "node-a", token)
//	if errors.Is(err, client.ErrCandidateNotFound) {
//		// expired or resigned: campaign again
//	}
//	if st.State == client.StateLeader {
//		// lead, and pass st.Term (the fencing token) to what you guard
//	}
//
// # Step-down rule
//
// A leader that has had no successful heartbeat for its TTL minus a
// safety margin must stop acting as leader, whatever it last heard: the
// gateway may already have handed leadership to another candidate. The
// elector sidecar (`elector run`) obeys this rule; programs using this
// package directly must obey it themselves.
//
// # Errors
//
// The gateway answers errors with RFC 9457 problem documents. They come
// back as a *Problem, which matches the sentinels of this package with
// errors.Is (ErrCandidateNotFound, ErrTokenMismatch, ErrNoLeader, …) and
// can be taken apart with errors.As. Transport errors are returned as the
// http.Client returned them.
//
// # Events
//
// Watch follows an election's event stream, reconnecting after a dropped
// connection and resuming from the last event id it saw, so that every
// event arrives once. A "reset" event carries a Snapshot of the whole
// election: it comes first on a fresh stream, and again when the gateway
// no longer holds the point a resumption asked for.
//
// A Client is safe for concurrent use. Tokens are sent only in the
// Elector-Candidate-Token header and never appear in errors.
package client
