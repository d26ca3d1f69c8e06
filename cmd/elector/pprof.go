//go:build pprof

package main

import (
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
)

// A build with -tags pprof serves Go's profiles on the address in
// ELECTOR_PPROF (such as 127.0.0.1:6060), for measuring a running serve
// (see bench/doc.go). Release builds have no such listener.
func init() {
	if addr := os.Getenv(envPprof); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }() //nolint:gosec // a profiling build on loopback
	}
}
