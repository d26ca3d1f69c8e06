// Package memory is an in-process gateway.Backend: every election is a
// gateway.Record held under one mutex, and events live in a bounded ring
// from which watchers read and resume.
//
// It keeps nothing across a restart, so it suits tests and single-process
// experiments; the durable default is the embedded NATS backend.
//
// Why two leaders (or more holders than an election's holders setting)
// cannot happen: every transition of every election runs under Backend.mu
// on the one Record of that election, and the Record fills a slot only
// while fewer than the setting may act (see gateway.Record).
//
// Time is this process's clock alone: expiries, handover delays and error
// cooldowns are deadlines in the Record, applied by Advance as the clock
// passes them. With one process there is no other replica's clock to
// disagree with, so the engine-timed markers of the NATS and etcd backends
// (gateway.Record.EngineTimed) have nothing to add here.
package memory
