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

	"github.com/electorhq/elector/client"
)

// DefaultProxyStaleAfter is how long `elector proxy` keeps forwarding to
// the leader it last heard of while it cannot follow the election's event
// stream: the sidecar's default TTL, after which that leader has stepped
// down if it could not reach the gateway either.
const DefaultProxyStaleAfter = DefaultSidecarTTL

// proxyFlags is what `elector proxy` is told.
type proxyFlags struct {
	gateway, apiToken   string
	election            string
	listen, key         string
	staleAfter          time.Duration
	logLevel, logFormat string
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
	gatewayFlag(fs, &f.gateway, "the gateway's URL or host:port, or several separated by commas, tried in turn")
	fs.StringVar(&f.apiToken, "api-token", "", "API token sent as Authorization: Bearer, for gateways that require one (default $"+envAPIToken+")")
	fs.StringVar(&f.election, "election", "", "the election whose leader requests go to (required)")
	fs.StringVar(&f.listen, "listen", "", "the address to take requests on, e.g. 127.0.0.1:8000 (required)")
	fs.StringVar(&f.key, "metadata-key", DefaultProxyMetadataKey, "the key of the leader's metadata holding the address to forward to")
	fs.DurationVar(&f.staleAfter, "stale-after", DefaultProxyStaleAfter, "with the event stream down, forward to the last leader heard for this long, then answer 503 (set it to the candidates' TTL)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	return fs
}

// gateways are the URLs of --gateway.
func (f *proxyFlags) gateways() []string {
	return (&sidecarConfig{gateway: f.gateway}).gateways()
}

// check reports the first flag that cannot work.
func (f *proxyFlags) check() error {
	for _, g := range f.gateways() {
		if client.New(g).BaseURL() == "" {
			return fmt.Errorf("--gateway %q is not an http(s) URL or a host:port such as 127.0.0.1:8080", g)
		}
	}
	switch {
	case len(f.gateways()) == 0:
		return errors.New("--gateway (or $" + envGateway + ") is required, e.g. --gateway http://127.0.0.1:8080")
	case f.election == "":
		return errors.New("--election is required")
	case f.listen == "":
		return errors.New("--listen is required, e.g. --listen 127.0.0.1:8000")
	case f.key == "":
		return errors.New("--metadata-key must not be empty")
	case f.staleAfter <= 0:
		return fmt.Errorf("--stale-after %s: want a positive duration", f.staleAfter)
	case f.logLevel != "debug" && f.logLevel != "info" && f.logLevel != "warn" && f.logLevel != "error":
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	case f.logFormat != "text" && f.logFormat != "json":
		return fmt.Errorf("--log-format %q: want text or json", f.logFormat)
	}
	return nil
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
	envDefault(fs, "api-token", envAPIToken, &f.apiToken)
	f.gateway = gatewayURL(f.gateway)
	if err := f.check(); err != nil {
		fmt.Fprintf(stderr, "elector proxy: %v\n", err)
		return 2
	}
	log := newLogger(LogConfig{Level: f.logLevel, Format: f.logFormat}, stderr)
	p := newLeaderProxy(proxyConfig{election: f.election, key: f.key, staleAfter: f.staleAfter, log: log})
	opts := []client.Option{client.WithUserAgent("elector-proxy/" + version), client.WithAPIToken(f.apiToken)}
	ps, err := serveProxy(ctx, f.listen, p, f.gateways(), opts, proxyGrace)
	if err != nil {
		fmt.Fprintf(stderr, "elector proxy: --listen: %v\n", err)
		return 1
	}
	select {
	case <-ctx.Done():
		ps.stop()
		log.LogAttrs(ctx, slog.LevelInfo, "elector proxy stopped")
		return 0
	case err := <-ps.errc:
		ps.stop()
		if err != nil {
			log.LogAttrs(ctx, slog.LevelError, "elector proxy stopped: the gateway refuses the election's event stream",
				slog.String("election", f.election), slog.String("err", strings.TrimSpace(err.Error())))
			return 1
		}
		return 0
	}
}
