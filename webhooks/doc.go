// Package webhooks delivers election events as signed HTTP callbacks: the
// Standard Webhooks signature (signature.go, with Verify for Go receivers),
// endpoints (election subscriptions and candidates' own endpoints), a
// durable outbox kept in the backend's gateway.KV, and the begin deadline
// that puts a leader whose begin webhook is not acknowledged in error.
//
// The outbox. Each endpoint has a cursor record in the KV: the id of the
// last event it is done with and a claim {replica, until}. A Service (one
// per gateway replica) claims endpoints that are unclaimed or whose claim
// expired, by compare-and-set, and runs one worker per claimed endpoint.
// The worker watches the election's events after the cursor, delivers the
// ones the endpoint wants one at a time, in order, with retries, records
// every attempt in a delivery record, and advances the cursor by
// compare-and-set while it still holds the claim. A replica that dies stops
// renewing its claims; when they expire another replica continues from the
// cursor and sends the in-flight event again with the same webhook-id.
// Delivery is therefore at least once: receivers de-duplicate on
// webhook-id (see docs/webhooks.md).
//
// Why one endpoint is never worked by two replicas at once: a worker
// renews its claim and advances the cursor only by compare-and-set on the
// revision it last wrote; a replica that lost its claim (expired and taken)
// fails its next write and stops. And an attempt starts only while the
// claim outlasts it (extended first if need be; ClaimTTL is at least twice
// RequestTimeout), so no attempt is still running when another replica may
// take the endpoint: as judged by the replicas' clocks, which must agree
// to well within the attempt's timeout.
//
// Outbound requests go through a dialer that refuses loopback, private,
// link-local, CGNAT, multicast and unspecified addresses, checked on the
// address actually dialled, unless Config.AllowPrivateNetworks is set.
//
//	svc := webhooks.New(gw, kv, webhooks.Config{Logger: log})
//	go svc.Run(ctx) // returns when ctx ends, releasing its claims
package webhooks
