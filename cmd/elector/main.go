package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is the release this binary was built from, set at link time with
// -ldflags "-X main.version=v1.2.3". It is the one mutable package-level
// variable we allow: the linker can only set a variable, not a constant.
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default handling so that a second
	// one kills a shutdown that takes too long.
	context.AfterFunc(ctx, stop)
	serveProfiles(os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
