// Package conformance is the conformance suite of elector's clients: what
// every client does (the Go client, clients/python, clients/typescript),
// written once as scenarios and run against real `elector serve`
// processes through each client's driver, a small program that speaks the
// line protocol of PROTOCOL.md and knows nothing of the scenarios.
//
// TestConformance builds elector and the Go driver, starts one gateway on
// the embedded backend (and, for a scenario that pauses or faults one, a
// gateway or an HTTP fault proxy of its own), and runs every scenario as
// a subtest per driver: TestConformance/python/resign_on_close_hands_over.
// The scenarios (scenarios_test.go) check that
//
//   - the first candidate leads with a term, and the next follows;
//   - closing a leader resigns it, and the follower leads at once with a
//     higher term; a reported error and a transfer hand over the same way,
//     the old leader's signal ending first;
//   - a leader whose gateway is paused (SIGSTOP) past its TTL ends its
//     leadership signal less than TTL minus the client's own step-down
//     margin after the pause (measured and logged per client);
//   - a dead first gateway fails over to the second;
//   - 429 and 503 answers are honoured: no request before Retry-After
//     (seconds, or an HTTP-date) has passed;
//   - a leader whose heartbeats are refused stops before the gateway
//     expires it, then campaigns again and leads with a higher term;
//   - a watch and an observe resume after their connection is cut while
//     events happen, with no event missing and none twice;
//   - webhook verification accepts a real delivery and refuses it
//     tampered with or replayed;
//   - problems come back as the client's typed errors;
//   - a session's heartbeats keep its candidacies in two elections past
//     their TTL, and closing it resigns both;
//   - the client's session keeper keeps its leader past twice the TTL and
//     resigns it when closed; with its heartbeats refused, the leader's
//     signal ends before the gateway could expire the candidacy, and the
//     keeper ends with the session-not-found error once they pass again.
//
// The parity tests (go test ./clients/conformance -run Parity) need no
// gateway: they read openapi.yaml and each client's source, and check
// that every operation a program calls has a method in each client's
// Client (clientMethods in parity_test.go names them; notClientCalls
// lists the webhooks, pages, metrics and spec documents, with why) and
// that every problem type is mapped by each client's table of typed
// errors. An operation or problem type added to openapi.yaml fails them
// until every client has it.
//
// Drivers: the Go driver (godriver, built by the test), the Python one
// (/usr/bin/python3 clients/python/conformance_driver.py, or python3 on
// PATH) and the TypeScript one (node
// clients/typescript/dist/conformance-driver.js, built with npm ci && npm
// run build in clients/typescript). A driver whose runtime or file is
// missing is skipped, unless ELECTOR_CONFORMANCE_REQUIRE (go,python,
// typescript) names it; then it fails. To run one driver:
//
//	go test ./clients/conformance -run 'TestConformance/python' -v
package conformance
