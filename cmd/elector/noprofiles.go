//go:build !pprof

package main

import "io"

// serveProfiles does nothing in a release build: profiles are served only
// by a build with -tags pprof (pprof.go).
func serveProfiles(io.Writer) {}
