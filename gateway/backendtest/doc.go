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
// The suite uses TTLs of at least one second (NATS per-message TTLs are
// whole seconds) and real time; its subtests run in parallel on distinct
// elections of one backend.
package backendtest
