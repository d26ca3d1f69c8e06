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
// AgreesWithTheRecord is a model test: random sequences of steps run
// through gateway.Record and through the backend, every answer, event and
// snapshot compared, a disagreement shrunk to the shortest sequence that
// shows it (model.go). ELECTOR_MODEL_SEED replays a seed and
// ELECTOR_MODEL_OPS sets the number of steps (default DefaultModelOps):
//
//	ELECTOR_MODEL_OPS=2000 go test ./backends/etcd -run 'TestConformanceSingleMember/AgreesWithTheRecord'
//
// The suite uses TTLs of at least one second (NATS per-message TTLs are
// whole seconds) and real time; its subtests run in parallel on distinct
// elections of one backend.
package backendtest
