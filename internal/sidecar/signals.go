package sidecar

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyStop relays SIGTERM and SIGINT to ch.
func notifyStop(ch chan<- os.Signal) { signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT) }
