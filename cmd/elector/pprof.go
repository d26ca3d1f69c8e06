//go:build pprof

package main

import (
	"fmt"
	"io"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
)

// serveProfiles serves Go's profiles, in a build with -tags pprof, on the
// address in ELECTOR_PPROF (such as 127.0.0.1:6060), for measuring a
// running serve (see bench/doc.go). Release builds have no such listener
// (noprofiles.go). A listener that cannot start is reported on stderr.
func serveProfiles(stderr io.Writer) {
	addr := os.Getenv(envPprof)
	if addr == "" {
		return
	}
	go func() {
		err := http.ListenAndServe(addr, nil) //nolint:gosec // a profiling build on loopback
		fmt.Fprintf(stderr, "elector: %s=%s: profiles not served: %v\n", envPprof, addr, err)
	}()
}
