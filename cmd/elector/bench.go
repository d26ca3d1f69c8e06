package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/electorhq/elector/bench"
)

// benchUsage introduces the flags of elector bench.
const benchUsage = `Usage: elector bench [--gateway URL[,URL…]] [flags]

Drive a load against one or more gateways: candidates in elections
heartbeating every TTL/3, event-stream subscribers, leader reads and a burst
of campaigns into fresh elections. At the end the candidates resign and a
summary prints throughput, latency percentiles and errors by problem type.

Flags:
`

// benchFlags are the flags of elector bench.
type benchFlags struct {
	cfg      bench.Config
	keep     bool
	gateway  string
	output   string
	progress time.Duration
}

// newBenchFlags is the flag set of elector bench.
func newBenchFlags(stderr io.Writer, f *benchFlags) *pflag.FlagSet {
	cfg := &f.cfg
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	gatewayFlag(fs, &f.gateway, "the gateways' URLs or host:ports, comma-separated")
	fs.BoolVar(&cfg.Failover, "failover", false, "move a candidate to the next gateway when its own fails or hangs, as the Go client and the sidecar do")
	fs.StringVar(&cfg.APIToken, "api-token", "", "API token sent as Authorization: Bearer (default $"+envAPIToken+"); removing the elections at the end needs the admin scope")
	fs.IntVarP(&cfg.Candidates, "candidates", "n", 100, "steady candidates that heartbeat every TTL/3")
	fs.IntVarP(&cfg.Elections, "elections", "m", 10, "elections the candidates are spread over")
	fs.DurationVar(&cfg.TTL, "ttl", bench.DefaultTTL, "the candidates' TTL")
	fs.IntVarP(&cfg.Connections, "connections", "c", bench.DefaultConnections, "heartbeat loops, one connection each")
	fs.IntVarP(&cfg.Subscribers, "subscribers", "k", 1, "event-stream subscribers measuring event latency")
	fs.IntVar(&cfg.Readers, "readers", 0, "loops reading the elections' leader as fast as they are answered")
	fs.IntVar(&cfg.Burst, "burst", 0, "campaigns (each resigned at once) into fresh elections")
	fs.IntVar(&cfg.BurstWorkers, "burst-workers", bench.DefaultBurstWorkers, "concurrent loops of the burst")
	fs.DurationVarP(&cfg.Duration, "duration", "d", 30*time.Second, "how long the load runs (at most 24h)")
	fs.DurationVar(&cfg.Timeout, "timeout", bench.DefaultTimeout, "bound of each request")
	fs.StringVar(&cfg.Prefix, "prefix", "", "prefix of the run's election names (default bench-<random>)")
	fs.BoolVar(&f.keep, "keep-elections", false, "leave the run's elections in place (by default they are deleted at the end)")
	fs.StringVarP(&f.output, "output", "o", "text", "text or json")
	fs.DurationVar(&f.progress, "progress", time.Second, "interval of the progress line on a terminal (0: none)")
	return fs
}

// runBench runs elector bench. Exit codes: 0 the run completed (its errors
// are in the summary), 1 it could not start, 2 bad usage.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f benchFlags
	fs := newBenchFlags(stderr, &f)
	if err := fs.Parse(args); err != nil {
		return usageExit(stderr, "bench", err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "elector bench: unexpected argument %q; flags name their values, as in --gateway %s\n", fs.Arg(0), fs.Arg(0))
		return 2
	}
	if f.output != "text" && f.output != "json" {
		fmt.Fprintf(stderr, "elector bench: --output %q: want text or json\n", f.output)
		return 2
	}
	envDefault(fs, "api-token", envAPIToken, &f.cfg.APIToken)
	cfg, output, progress := f.cfg, f.output, f.progress
	cfg.RemoveElections = !f.keep
	for g := range strings.SplitSeq(gatewayURL(f.gateway), ",") {
		if g != "" {
			cfg.Gateways = append(cfg.Gateways, g)
		}
	}
	load, err := bench.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "elector bench: %s\n", benchError(err))
		return 2
	}

	stopProgress := func() {}
	if output == "text" && progress > 0 && isTerminal(stdout) {
		stopProgress = showProgress(load, stdout, progress)
	}
	sum, err := load.Run(ctx)
	stopProgress()
	if err != nil {
		fmt.Fprintf(stderr, "elector bench: %s\n", benchError(err))
		return 1
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(sum)
	} else {
		err = bench.WriteText(stdout, sum)
	}
	if err != nil {
		fmt.Fprintf(stderr, "elector bench: %v\n", err)
		return 1
	}
	return 0
}

// benchError is err without the package prefixes the command's own name
// makes redundant ("bench: ", "elector: ").
func benchError(err error) string {
	msg := err.Error()
	for _, p := range []string{"bench: ", "elector: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// showProgress rewrites one line of w every interval until the function it
// returns is called, which clears the line and returns once the writer
// has stopped.
func showProgress(load *bench.Load, w io.Writer, interval time.Duration) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		var prev bench.Progress
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\x1b[K")
				return
			case <-t.C:
				cur := load.Progress()
				fmt.Fprintf(w, "\r%s\x1b[K", bench.ProgressLine(prev, cur))
				prev = cur
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
