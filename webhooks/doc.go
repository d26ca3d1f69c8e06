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
// take the endpoint.
//
// Clocks. That last argument is judged by the replicas' clocks: a claim's
// Until is written by the holder's clock and read against the taker's. No
// engine TTL can decide it instead through gateway.KV, which has
// compare-and-set and no expiry (a claim that expires by itself needs a
// new KV ability: a lease on etcd, a per-key TTL on NATS). What skew s
// between two replicas' clocks can cause, and what it cannot:
//   - With s below ClaimTTL, a healthy holder renews every ClaimTTL/3 and
//     no one takes its endpoints. A holder that is alive but cannot reach
//     the backend keeps delivering until its Until (holds); a taker whose
//     clock runs s ahead takes over up to s before that, so for at most s
//     the two may both send to the endpoint: the taker resends the
//     in-flight event (same webhook-id) and may send the next ones before
//     the old holder's attempt ends. The receiver then sees a duplicate,
//     possibly after a later event: a duplicate or reordered delivery.
//   - With s at or above ClaimTTL, a replica whose clock runs ahead takes
//     endpoints from healthy holders at once, and endpoints can move back
//     and forth between replicas, each move a possible duplicate or
//     reordering as above.
//   - Never a lost event: the cursor moves only by compare-and-set of the
//     claim's holder after the endpoint acknowledged the event (or the
//     attempts are exhausted and recorded), a replica that lost the claim
//     fails its next write and stops, and a taker starts from the cursor
//     as stored. Skew changes who delivers and how often, never whether.
//
// So replicas' clocks should agree to well within ClaimTTL minus
// RequestTimeout (NTP does, by orders of magnitude); receivers
// de-duplicate on webhook-id and order by the event's timestamp or term
// in any case. Leadership itself never depends on these clocks.
//
// Outbound requests go through a dialer that refuses loopback, private,
// link-local, CGNAT, multicast and unspecified addresses, checked on the
// address actually dialled, unless Config.AllowPrivateNetworks is set.
//
//	svc := webhooks.New(gw, kv, webhooks.Config{Logger: log})
//	go svc.Run(ctx) // returns when ctx ends, releasing its claims
package webhooks
