// Package proxy forwards HTTP requests to the current leader of an
// election: `elector proxy`, and `elector run --proxy-listen` beside a
// candidate's sidecar.
//
// A Proxy learns who leads from the election's event stream (one stream
// per proxy, never a request per forwarded request) and forwards each
// request, websockets and event streams too, to the address the leader
// registered in its metadata under Config.Key (LeaderTarget says which
// addresses are taken). While nobody leads, before it has heard, and once
// its stream has been down for longer than Config.StaleAfter, it answers
// 503 with Retry-After and an RFC 9457 problem. Serve listens and follows
// the election until Stop.
//
// The proxy routes; it does not fence and makes no leader. Who leads is
// decided by the gateway alone; a request in flight at a handover still
// reaches the old leader, which is why every forwarded request carries
// HeaderLeader and HeaderTerm: the leader refuses a write whose term is
// not its own (ELECTOR_TERM), so two leaders never both act on it.
//
//	p := proxy.New(proxy.Config{Election: "billing", StaleAfter: 10 * time.Second})
//	srv, err := proxy.Serve(ctx, "127.0.0.1:8000", p, []string{"http://127.0.0.1:8080"}, nil, proxy.DefaultGrace)
//	…
//	srv.Stop()
//
// The package is internal: its one user is cmd/elector, whose flags are
// its public face. A Go program that wants to reach the leader reads it
// with client.Observe and keeps its own routing.
//
// Files: proxy.go is the handler and its route, feed.go follows the event
// stream, address.go checks a leader's address, server.go listens and
// stops.
package proxy
