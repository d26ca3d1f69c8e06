// Package backendtest is the conformance suite every gateway.Backend passes:
// FIFO order, TTL expiry, handover on resign, handover delay, error
// cooldown, the hold of a failed leader's promise, token checks, term
// monotonicity, watch and resume, elections of 1, 2 and 5 holders (never
// more holders than the setting, a term per holdership, lowering and
// raising the setting, expiries and transfers; refused with
// gateway.ErrNotSupported by a backend whose Harness says SingleHolder),
// and many
// goroutines campaigning and resigning at once never producing two leaders
// for one term.
//
// A backend's own test calls it against a real engine:
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, backendtest.Harness{
//			New: func(t *testing.T) gateway.Backend { return memory.New() },
//		})
//	}
//
// AgreesWithTheRecord is a model test (model.go): random sequences of
// steps (campaigns with priorities and metadata, heartbeats, resignations,
// error reports, FailLeader, transfers, handovers and cancellations,
// settings of one to three holders, a handover delay, a cooldown and
// preempt, and candidates that stop heartbeating so that their TTL runs
// out) run through gateway.Record and through the backend; after every
// step the answers, the events (types, candidates, reasons, terms and
// previous holderships, in order), the line, the holders, the pending
// transfer and whether a promotion is held back are compared. Terms are
// compared by order, not value. Timers run on the backend's own clock:
// the test waits on the backend's events and snapshots until each timer
// has ended in an order the timers' windows allow, never on a sleep. A
// disagreement is shrunk (steps deleted, arguments made plainer) to the
// shortest sequence that still shows it, and the failure prints it step
// by step with both sides' answers and events, and the command that
// replays its seed. A Harness declares what a backend may do otherwise
// than the Record (TransferMovesFollowers, ExpiryHolds,
// BeginSkipsHeldPrevious), each a documented difference of that backend.
//
// By default the test takes DefaultModelOps steps per backend, in
// sequences of 12 run side by side (about 15 s on etcd or NATS; a memory
// backend runs in a testing/synctest bubble, where no time passes, ten
// times as many). ELECTOR_MODEL_OPS sets the number of steps,
// ELECTOR_MODEL_SEED replays a seed, ELECTOR_MODEL_LOG logs sequences that
// pass too:
//
//	ELECTOR_MODEL_OPS=2000 go test ./backends/etcd -run 'TestConformanceSingleMember/AgreesWithTheRecord'
//	ELECTOR_MODEL_SEED=42 go test ./backends/nats -run 'TestConformanceSingleServer/AgreesWithTheRecord/seed=42$'
//
// The suite uses TTLs of at least one second (NATS per-message TTLs are
// whole seconds) and real time; its subtests run in parallel on distinct
// elections of one backend.
package backendtest
