//go:build !linux && !windows

package sidecar

import "syscall"

// ownGroup starts a process as the leader of a new process group. Outside
// Linux there is no parent-death signal: a sidecar killed with SIGKILL
// leaves its commands and its child running.
func ownGroup(syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
