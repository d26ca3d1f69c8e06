//go:build !windows

package sidecar

import "syscall"

// killGroup sends sig to every process of the process group pgid.
func killGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }

// processGroup is this process's group id.
func processGroup() int { return syscall.Getpgrp() }
