// Package proc runs a test's child processes — etcd members, `elector
// serve` replicas — that the test kills, stops and restarts: each start
// appends to one log file, the environment is filtered so that only the
// flags configure the child, and Stop ends it even when it was stopped
// with SIGSTOP. Alive and LiveInGroup tell a test whether a process, or
// any process of a group, has yet exited.
package proc
