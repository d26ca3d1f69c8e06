// Package soak checks elector's safety from the outside: a history of
// every operation candidates made, every event subscribers received and
// every fault injected, and a checker that reads it afterwards.
//
// The checker asserts, per election of N holders (Rules.Holders, 1 by
// default):
//
//   - no instant has more than N candidates acting as holders (with N = 1:
//     no two leaderships overlap), where a candidate leads from the answer
//     that told it so until it learns otherwise or, by the step-down rule,
//     until its last successful heartbeat's start plus its TTL minus a
//     safety margin;
//   - no leadership begins early: while N earlier holderships that did not
//     resign have not passed the start of their last answer saying they
//     lead plus the TTL, the time elector promised them;
//   - a term names one leadership only, and leader.begin terms strictly
//     increase on every stream;
//   - an event stream, resumed with Last-Event-ID across disconnections,
//     has no duplicate, nothing out of order and no gap: a begin comes
//     only while fewer than N holderships are open, every end names an
//     open one (with N = 1: begin and end alternate term by term), and
//     every subscriber saw the same events over the span they share;
//   - every acknowledged write survives: a campaign answered with
//     success shows as its candidate.joined on some stream, and a term
//     an answer told a candidate it leads shows as that leadership's
//     leader.begin (checked where the streams cover the answer);
//   - every event a subscriber received of an election with a webhook
//     subscription reached the webhook at least once, with the same type,
//     term and candidate, each request verified by its signature; and the
//     webhook never got an event older than one it had already got (the
//     same event again is allowed);
//   - an event id carries byte-identical JSON on every stream and in
//     every webhook request.
//
// It also counts, without failing on them, acknowledged candidacies lost
// early (told candidate-not-found before their last acknowledged
// heartbeat plus the TTL: LostEarly) and what a stopped etcd follower cost
// the candidates (LongestAnswer).
//
// The soak tests (soak_test.go) run real `elector serve` processes (one
// on the embedded backend, three clustered, or three on three etcd
// members, processes of Debian's etcd 3.4 or of go.mod's version) under
// the load of package bench, with a webhook receiver subscribed to every
// election, while killing (-9) and restarting them, stopping them
// (SIGSTOP) past the candidates' TTL, and stopping leaders' heartbeats
// past their TTL. The three clustered members route to each other through
// TCP proxies the test starts, and one member at a time is cut off from
// the other two (both directions) past the TTL, then healed; on etcd,
// one replica at a time is cut off from etcd, and etcd's members are
// stopped (the raft leader past the TTL, or a follower), killed and
// restarted (etcdfaults_test.go). They run only when ELECTOR_SOAK is set
// to a duration; ELECTOR_SOAK_HOLDERS sets the elections' holders N (1 by
// default), on every backend, and each election gets max(6, 2N)
// candidates, so that more than N can act and the holders check can fail:
//
//	ELECTOR_SOAK=2m go test -v -run TestSoak ./soak/
//	ELECTOR_SOAK=1m ELECTOR_SOAK_HOLDERS=2 go test -v -run 'TestSoak$' ./soak/
//	ELECTOR_SOAK=2m ELECTOR_SOAK_HOLDERS=2 go test -v -run '^TestSoakEtcd$' -timeout 20m ./soak/
package soak
