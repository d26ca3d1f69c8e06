// Package sidecar is the engine of `elector run`: roboll/elector's
// reconciliation loop over a candidacy. It campaigns through the gateway
// (client.Candidacy: heartbeats every TTL/3, the step-down rule, failover
// between gateways), runs the begin command and starts the supervised
// command while this candidate leads, stops it and runs the end command
// when it no longer does, and reports a failed begin as an error so that
// the gateway hands leadership over and the candidate sits out its error
// timeout. A health check, if configured, ends a leadership and leaves the
// line while the application is unhealthy. ServeStatus serves /healthz,
// /leader and /metrics.
//
//	s, err := sidecar.New(sidecar.Config{
//		Gateways: []string{"http://127.0.0.1:8080"},
//		Election: "billing", ID: "node-a",
//		Begin: "systemctl start billing", End: "systemctl stop billing",
//	})
//	if err != nil { … }
//	err = s.Run(ctx) // until ctx ends: then end command, resign
//
// Why two leaders cannot happen through the sidecar: the candidacy stops
// acting as leader (the end command runs, the supervised command is
// stopped) once its heartbeats have failed for its TTL minus a safety
// margin, before the gateway can promote anyone else; after a failed begin
// or health check the end command runs before the error is reported, and
// after a transfer before the handover; a sidecar whose end command keeps
// failing exits without resigning (ErrEndFailed), so the next leader waits
// for its TTL rather than overlapping with a host that may still act.
//
// The supervised command runs in its own process group under a guard
// process (this binary run as GuardCommand; the program's main must
// dispatch that to RunGuard), which takes the group down with it when the
// sidecar dies. Process groups and parent-death signals are Unix (the
// latter Linux); on Windows the commands run but are not stopped as groups.
//
// The package is internal: its one user is cmd/elector, whose flags,
// environment and exit codes are its public face. A Go program that wants
// to campaign uses client.Candidacy, which this package is built on.
//
// Files: sidecar.go is the reconciler, config.go wires it, source*.go are
// where it learns whether it leads (the gateway or the console),
// hooks.go runs the commands, child.go the supervised command and its
// guard, health.go the health check, status.go the status server.
package sidecar
