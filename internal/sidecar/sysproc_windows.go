package sidecar

import "syscall"

// On Windows there are no process groups to signal: elector run's commands
// and supervised program are not stopped as groups, and a killed sidecar
// leaves them running. The sidecar is meant for Unix; serve and the client
// commands work everywhere.

func ownGroup(syscall.Signal) *syscall.SysProcAttr { return nil }

func killGroup(int, syscall.Signal) {}

func processGroup() int { return 0 }
