// Package memory is an in-process gateway.Backend: every election is a
// gateway.Record held under one mutex, and events live in a bounded ring
// from which watchers read and resume.
//
// It keeps nothing across a restart, so it suits tests and single-process
// experiments; the durable default is the embedded NATS backend.
//
// Why two leaders cannot happen: every transition of every election runs
// under Backend.mu on the one Record of that election, and the Record has a
// single leader slot (see gateway.Record).
package memory
