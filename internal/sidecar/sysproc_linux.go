package sidecar

import "syscall"

// ownGroup starts a process as the leader of a new process group, so that
// a signal to the group reaches its children too, and has the kernel send
// it onDeath when the sidecar dies, even by SIGKILL.
//
// Pdeathsig is Linux-only, and it fires when the thread that started the
// process exits; the Go runtime does not end its threads while the process
// lives (no goroutine here locks its thread), so in practice it fires when
// the sidecar process dies.
func ownGroup(onDeath syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: onDeath}
}
