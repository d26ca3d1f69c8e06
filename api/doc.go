// Package api is elector's HTTP interface: a chi router over a
// gateway.Gateway that serves the REST API v1 (campaign, heartbeat, resign,
// error report, candidates, leader, elections and their settings,
// transfers and their cancellation), the Server-Sent Events streams, the
// probes, the OpenAPI document, /docs and the /ui live view.
//
// An election of several holders (its holders setting) adds "holders",
// every holder with its own term, to the heartbeat, campaign and error
// answers, the leader read, the election and the reset snapshots; with
// one holder the member is left out, so those answers are as before.
//
// The contract is openapi.yaml at the root of the module; this package's
// tests validate every response they receive against it.
//
// Every error is an RFC 9457 application/problem+json document with a stable
// type, urn:elector:problem:<slug>; problem.go is the one place that maps
// errors to problems. Bad input is always answered with a 4xx and leaves the
// elections unchanged.
//
// Every request goes through the same guards (router.go, ratelimit.go,
// body.go): a deadline for its body (408 past it), heartbeats limited per
// candidate, other writes and reads optionally per client address, and a cap
// on the reads and event streams served at once. The zero Config turns the
// rate limits and the read cap off; elector serve turns on the heartbeat
// limit and the read cap (DefaultHeartbeatRate, DefaultMaxReads). Reads
// end after ReadTimeout with a 503 (readbound.go). Config.LogRequests
// writes an access log; answers with a 5xx status are logged either way.
//
// Candidates prove who they are with the token returned by their campaign,
// sent back in the Elector-Candidate-Token header, a header of its own so
// that it never collides with API authentication.
//
//	h := api.New(gw, api.Config{Logger: logger})
//	srv := &http.Server{Addr: ":8080", Handler: h, ReadHeaderTimeout: 5 * time.Second}
package api
