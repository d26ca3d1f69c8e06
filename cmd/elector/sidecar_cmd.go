package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/electorhq/elector/internal/proxy"
	"github.com/electorhq/elector/internal/sidecar"
)

// sidecarConfig is what `elector run` is told.
type sidecarConfig struct {
	gatewayFlags
	election, id          string
	ttl                   time.Duration
	priority              int
	metadata              string
	begin, end, onError   string
	errorTimeout          time.Duration
	endRetries            int
	endRetryInterval      time.Duration
	childGrace            time.Duration
	commandTimeout        time.Duration
	statusListen          string
	proxyListen, proxyKey string
	healthCommand         string
	healthURL             string
	healthFailures        int
	healthTimeout         time.Duration
	console               bool
	childArgv             []string
	stdin                 io.Reader
	stdout, stderr        io.Writer
}

func newRunFlags(stderr io.Writer, c *sidecarConfig) *pflag.FlagSet {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: elector run [flags] [-- CMD ARGS]

Campaign in an election through the gateway and run the begin command while
this candidate leads, the end command when it stops leading. With -- CMD ARGS,
also keep CMD running while leading (SIGTERM to its process group on end,
SIGKILL after --child-grace). Commands get ELECTOR_ELECTION,
ELECTOR_CANDIDATE, ELECTOR_TERM (the fencing token), ELECTOR_LEADER and
ELECTOR_REASON in their environment: elected for the begin command; for the
end command resigned (the sidecar stops), lost, expired, heartbeat-timeout,
error or transferred, the reasons of the Go client's OnStoppedLeading.

With --proxy-listen, also forward HTTP requests (streams and websockets
too) to the current leader, at the address it registered in its
--metadata. With --health-command or --health-url, check the application
every TTL/3: after --health-failures failures in a row a leader ends its
leadership (end command, the check's output reported as the error), and
the candidate leaves the line until a check passes again.

Flags:
`)
		fs.PrintDefaults()
	}
	c.gatewayFlags.register(fs)
	fs.StringVar(&c.election, "election", "", "the election to campaign in (required)")
	fs.StringVar(&c.id, "id", "", "this candidate's id (default the host name)")
	fs.DurationVar(&c.ttl, "ttl", sidecar.DefaultTTL, "the candidacy's TTL; heartbeats go every TTL/3")
	fs.IntVar(&c.priority, "priority", 0, "this candidate's priority: higher goes first in line (needs a gateway backend with transfers)")
	fs.StringVar(&c.metadata, "metadata", "", `the candidate's metadata, a JSON object such as '{"addr":"10.0.0.7:8080"}'`)
	fs.StringVar(&c.begin, "leader-begin-command", "", "shell command run when this candidate becomes leader")
	fs.StringVar(&c.end, "leader-end-command", "", "shell command run when this candidate stops being leader")
	fs.StringVar(&c.onError, "error-command", "", "shell command run after a failed begin command")
	fs.DurationVar(&c.errorTimeout, "error-timeout", sidecar.DefaultErrorTimeout, "how long to sit out after a failed begin command before campaigning again")
	fs.IntVar(&c.endRetries, "end-retries", sidecar.DefaultEndRetries, "how often a failing end command is retried before elector run exits with status 1")
	fs.DurationVar(&c.endRetryInterval, "end-retry-interval", sidecar.DefaultEndRetryInterval, "the wait between attempts of a failing end command")
	fs.DurationVar(&c.childGrace, "child-grace", sidecar.DefaultChildGrace, "how long the supervised command gets to exit after SIGTERM before SIGKILL")
	fs.DurationVar(&c.commandTimeout, "command-timeout", 0, "kill a begin, end or error command after this long (0: no limit)")
	fs.StringVar(&c.statusListen, "status-listen", "", "serve /healthz, /leader and /metrics on this address, e.g. 127.0.0.1:4040 (default: off)")
	fs.StringVar(&c.proxyListen, "proxy-listen", "", "forward HTTP requests received on this address, e.g. 127.0.0.1:8000, to the current leader (default: off)")
	fs.StringVar(&c.proxyKey, "proxy-metadata-key", proxy.DefaultMetadataKey, "the key of the candidates' metadata holding the address to forward to: host:port or an http(s) URL")
	fs.StringVar(&c.healthCommand, "health-command", "", "shell command that checks the application every TTL/3; healthy when it exits 0")
	fs.StringVar(&c.healthURL, "health-url", "", "URL of the application checked with GET every TTL/3; healthy on 200 to 399")
	fs.IntVar(&c.healthFailures, "health-failures", sidecar.DefaultHealthFailures, "failed health checks in a row that end a leadership and leave the line")
	fs.DurationVar(&c.healthTimeout, "health-timeout", 0, "a health check taking longer fails; below TTL/3 (default TTL/6)")
	fs.BoolVar(&c.console, "console", false, "read LEADER, NOTLEADER and ERROR lines from stdin instead of using a gateway")
	return fs
}

// check reports the first setting that cannot work.
func (c *sidecarConfig) check() error {
	if !c.console {
		if err := c.checkGateways(); err != nil {
			return err
		}
	}
	switch {
	case !c.console && c.election == "":
		return errors.New("--election is required")
	case c.id == "":
		return errors.New("--id is required (the host name is unknown)")
	case c.ttl < time.Second:
		return fmt.Errorf("--ttl %s is below 1s", c.ttl)
	case c.errorTimeout < 0, c.endRetryInterval < 0, c.childGrace < 0, c.commandTimeout < 0, c.healthTimeout < 0:
		return errors.New("durations must not be negative")
	case c.endRetries < 0:
		return errors.New("--end-retries must not be negative")
	}
	if err := c.checkLog(); err != nil {
		return err
	}
	if c.metadata != "" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(c.metadata), &obj); err != nil {
			return fmt.Errorf("--metadata must be a JSON object: %v", err)
		}
	}
	if err := c.checkProxy(); err != nil {
		return err
	}
	return c.checkHealth()
}

// checkProxy reports what keeps --proxy-listen from working.
func (c *sidecarConfig) checkProxy() error {
	switch {
	case c.proxyListen == "":
		return nil
	case c.console:
		return errors.New("--proxy-listen needs a gateway to follow; it does not go with --console")
	case c.proxyKey == "":
		return errors.New("--proxy-metadata-key must not be empty")
	}
	// This candidate may lead: it must register where it is reached.
	if _, err := proxy.LeaderTarget(json.RawMessage(c.metadata), c.proxyKey); err != nil {
		return fmt.Errorf("--proxy-listen forwards to the address each leader registers under %q, and this candidate may lead, but %v; register it, e.g. --metadata '{\"%s\": \"10.0.0.7:8080\"}'",
			c.proxyKey, err, c.proxyKey)
	}
	return nil
}

// checkHealth reports what keeps the health check from working.
func (c *sidecarConfig) checkHealth() error {
	switch {
	case c.healthCommand != "" && c.healthURL != "":
		return errors.New("--health-command and --health-url exclude each other; pick one")
	case c.healthCommand == "" && c.healthURL == "":
		return nil
	case c.healthFailures < 1:
		return fmt.Errorf("--health-failures %d: want 1 or more", c.healthFailures)
	case c.healthTimeout >= c.ttl/3:
		return fmt.Errorf("--health-timeout %s must be below the check interval, TTL/3 = %s", c.healthTimeout, c.ttl/3)
	}
	if c.healthURL != "" {
		u, err := url.Parse(c.healthURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--health-url %q is not an http(s) URL such as http://127.0.0.1:8080/healthz", c.healthURL)
		}
	}
	return nil
}

// runSidecar is `elector run`. Exit codes: 0 after a clean shutdown (a
// leader has run its end command and resigned), 1 when the end command
// failed on every attempt or the sidecar could not run, 2 for bad flags.
func runSidecar(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &sidecarConfig{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := newRunFlags(stderr, c)
	if err := fs.Parse(args); err != nil {
		return usageExit(stderr, "run", err)
	}
	if dash := fs.ArgsLenAtDash(); dash >= 0 {
		if dash > 0 {
			fmt.Fprintf(stderr, "elector run: unexpected argument %q (put the supervised command after --)\n", fs.Arg(0))
			return 2
		}
		c.childArgv = fs.Args()
	} else if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "elector run: unexpected argument %q (put the supervised command after --)\n", fs.Arg(0))
		return 2
	}
	if c.id == "" {
		c.id, _ = os.Hostname()
	}
	c.resolve(fs)
	if err := c.check(); err != nil {
		fmt.Fprintf(stderr, "elector run: %v\n", err)
		return 2
	}
	log := c.logger(stderr)
	s, err := sidecar.New(c.engineConfig(log))
	if err != nil {
		fmt.Fprintf(stderr, "elector run: %v\n", err)
		return 2
	}
	if c.statusListen != "" {
		stop, err := s.ServeStatus(ctx, c.statusListen)
		if err != nil {
			fmt.Fprintf(stderr, "elector run: --status-listen: %v\n", err)
			return 1
		}
		defer stop()
	}
	runCtx := ctx
	if c.proxyListen != "" {
		var stop func()
		var err error
		if runCtx, stop, err = startSidecarProxy(ctx, c, log); err != nil {
			fmt.Fprintf(stderr, "elector run: --proxy-listen: %v\n", err)
			return 1
		}
		// The proxy stops after the sidecar: while a leader runs its end
		// command and resigns, requests go on reaching whoever leads.
		defer stop()
	}
	if err := s.Run(runCtx); err != nil {
		log.LogAttrs(ctx, slog.LevelError, "elector run stopped", slog.Any("err", err))
		return 1
	}
	if err := context.Cause(runCtx); ctx.Err() == nil && err != nil {
		log.LogAttrs(ctx, slog.LevelError, "elector run stopped: the proxy cannot follow the election", slog.Any("err", err))
		return 1
	}
	log.LogAttrs(ctx, slog.LevelInfo, "elector run stopped")
	return 0
}

// startSidecarProxy serves the proxy of --proxy-listen. It returns the
// context the sidecar runs under, which also ends, with the error as its
// cause, when a gateway refuses the proxy's event stream for good, and a
// function that stops the proxy.
func startSidecarProxy(ctx context.Context, c *sidecarConfig, log *slog.Logger) (context.Context, func(), error) {
	p := proxy.New(proxy.Config{Election: c.election, Key: c.proxyKey, StaleAfter: c.ttl, Logger: log})
	ps, err := proxy.Serve(ctx, c.proxyListen, p, c.gateways(), c.clientOptions("run"), proxy.DefaultGrace)
	if err != nil {
		return nil, nil, err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case err := <-ps.Err():
			cancel(err) // nil: the feed stopped with ctx
		case <-runCtx.Done():
		}
	}()
	return runCtx, func() {
		cancel(nil)
		<-done
		ps.Stop()
	}, nil
}

// engineConfig is the sidecar c describes.
func (c *sidecarConfig) engineConfig(log *slog.Logger) sidecar.Config {
	return sidecar.Config{
		Console:          c.console,
		Gateways:         c.gateways(),
		ClientOptions:    c.clientOptions("run"),
		Election:         c.election,
		ID:               c.id,
		TTL:              c.ttl,
		Priority:         c.priority,
		Metadata:         json.RawMessage(c.metadata),
		Begin:            c.begin,
		End:              c.end,
		OnError:          c.onError,
		ErrorTimeout:     c.errorTimeout,
		EndRetries:       c.endRetries,
		EndRetryInterval: c.endRetryInterval,
		CommandTimeout:   c.commandTimeout,
		Command:          c.childArgv,
		ChildGrace:       c.childGrace,
		HealthCommand:    c.healthCommand,
		HealthURL:        c.healthURL,
		HealthFailures:   c.healthFailures,
		HealthTimeout:    c.healthTimeout,
		Stdin:            c.stdin,
		Stdout:           c.stdout,
		Stderr:           c.stderr,
		UserAgent:        "elector-run/" + version,
		Logger:           log,
	}
}
