// Package servertest starts elector gateways for tests, as `elector serve`
// runs them: a server.Server with server.DefaultConfig on a free loopback
// port, over the backend a test chooses (memory unless an option says
// otherwise; embedded NATS on a temporary directory; etcd at an endpoint,
// such as one internal/etcdtest started), with options for what tests
// change (webhooks to private networks, limits, API tokens, any other
// field of server.Config). It waits until the gateway serves the API,
// and stops it when the test ends, failing the test if the gateway does
// not stop cleanly or leaves goroutines of its own behind.
//
//	gw := servertest.Start(t, servertest.Embedded(), servertest.AllowPrivateWebhooks())
//	res, err := http.Get(gw.URL + "/v1/elections/billing/leader")
//
// A gateway's logs go to t.Log, so a test shows them only when it fails
// (or under go test -v), unless the Logger option sends them elsewhere.
//
// It is internal: the gateway's own tests and the tests of the packages
// around it share it; programs embedding the gateway use package server.
package servertest
