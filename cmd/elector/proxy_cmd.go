package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/electorhq/elector/internal/proxy"
	"github.com/electorhq/elector/internal/sidecar"
)

// DefaultProxyStaleAfter is how long `elector proxy` keeps forwarding to
// the leader it last heard of while it cannot follow the election's event
// stream: the sidecar's default TTL, after which that leader has stepped
// down if it could not reach the gateway either.
const DefaultProxyStaleAfter = sidecar.DefaultTTL

// proxyFlags is what `elector proxy` is told.
type proxyFlags struct {
	gatewayFlags
	election    string
	listen, key string
	staleAfter  time.Duration
}

func newProxyFlags(stderr io.Writer, f *proxyFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("proxy", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: elector proxy --election E --listen ADDR [flags]

Forward every HTTP request received on --listen (streams and websockets
too) to the current leader of the election, at the address the leader
registered in its metadata under --metadata-key (host:port, or an http(s)
URL). It follows the election's event stream, so a new leader gets the next
request; while nobody leads it answers 503 with Retry-After and a problem.
For clients that do not campaign; a candidate's sidecar does the same with
elector run --proxy-listen.

Flags:
`)
		fs.PrintDefaults()
	}
	f.gatewayFlags.register(fs)
	fs.StringVar(&f.election, "election", "", "the election whose leader requests go to (required)")
	fs.StringVar(&f.listen, "listen", "", "the address to take requests on, e.g. 127.0.0.1:8000 (required)")
	fs.StringVar(&f.key, "metadata-key", proxy.DefaultMetadataKey, "the key of the leader's metadata holding the address to forward to")
	fs.DurationVar(&f.staleAfter, "stale-after", DefaultProxyStaleAfter, "with the event stream down, forward to the last leader heard for this long, then answer 503 (set it to the candidates' TTL)")
	return fs
}

// check reports the first flag that cannot work.
func (f *proxyFlags) check() error {
	if err := f.checkGateways(); err != nil {
		return err
	}
	switch {
	case f.election == "":
		return errors.New("--election is required")
	case f.listen == "":
		return errors.New("--listen is required, e.g. --listen 127.0.0.1:8000")
	case f.key == "":
		return errors.New("--metadata-key must not be empty")
	case f.staleAfter <= 0:
		return fmt.Errorf("--stale-after %s: want a positive duration", f.staleAfter)
	}
	return f.checkLog()
}

// runProxy is `elector proxy`. Exit codes: 0 after SIGINT or SIGTERM, 1
// when it cannot listen or a gateway refuses the event stream for good
// (a bad election name, a missing or wrong API token), 2 for bad flags.
func runProxy(ctx context.Context, args []string, _, stderr io.Writer) int {
	var f proxyFlags
	fs := newProxyFlags(stderr, &f)
	if err := fs.Parse(args); err != nil {
		return usageExit(stderr, "proxy", err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "elector proxy: unexpected argument %q\nRun 'elector proxy --help' for its usage.\n", fs.Arg(0))
		return 2
	}
	f.resolve(fs)
	if err := f.check(); err != nil {
		fmt.Fprintf(stderr, "elector proxy: %v\n", err)
		return 2
	}
	log := f.logger(stderr)
	p := proxy.New(proxy.Config{Election: f.election, Key: f.key, StaleAfter: f.staleAfter, Logger: log})
	ps, err := proxy.Serve(ctx, f.listen, p, f.gateways(), f.clientOptions("proxy"), proxy.DefaultGrace)
	if err != nil {
		fmt.Fprintf(stderr, "elector proxy: --listen: %v\n", err)
		return 1
	}
	select {
	case <-ctx.Done():
		ps.Stop()
		log.LogAttrs(ctx, slog.LevelInfo, "elector proxy stopped")
		return 0
	case err := <-ps.Err():
		ps.Stop()
		if err != nil {
			log.LogAttrs(ctx, slog.LevelError, "elector proxy stopped: the gateway refuses the election's event stream",
				slog.String("election", f.election), slog.String("err", strings.TrimSpace(err.Error())))
			return 1
		}
		return 0
	}
}
