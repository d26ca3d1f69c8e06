package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
)

// run is the whole command: main gives it the process's arguments (without
// the program name), a context that ends on SIGINT or SIGTERM, and its
// standard streams; tests call it in-process. It returns the exit code:
// 0 success, 1 failure, 2 bad usage or configuration.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return runServe(ctx, rest, stderr)
	case "run":
		return runSidecar(ctx, rest, os.Stdin, stdout, stderr)
	case "campaign", "heartbeat", "resign", "leader", "candidates", "watch", "transfer":
		return runClient(ctx, cmd, rest, stdout, stderr)
	case "bench":
		return runBench(ctx, rest, stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, rest, stdout, stderr)
	case "token":
		return runToken(rest, os.Stdin, stdout, stderr)
	case guardCommand:
		return runGuard(rest, stderr)
	case "completion":
		return runCompletion(rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprint(stdout, versionLine())
		return 0
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "elector: unknown command %q\n\n", cmd)
		usage(stderr)
		return 2
	}
}

// usage prints the list of commands.
func usage(w io.Writer) {
	fmt.Fprint(w, `elector is an HTTP leader-election gateway.

Usage:
  elector serve [flags]   start the gateway (elector serve --help lists the flags)
  elector run [flags] [-- CMD ARGS]
                          campaign as a sidecar: run begin / end commands (and CMD)
                          while leading (elector run --help lists the flags)
  elector campaign | heartbeat | resign | leader | candidates | watch | transfer [flags]
                          talk to a gateway (elector COMMAND --help); --output json
  elector bench --gateway URL[,URL…] [flags]
                          drive a load of candidates, streams and reads; print
                          throughput and latency (elector bench --help)
  elector healthcheck [--url URL]
                          exit 0 if the gateway's /readyz answers 2xx, else 1
  elector token new | hash
                          make an API token and its sha256, or hash one from stdin
  elector completion bash | zsh | fish
                          print a shell completion script
  elector version         print the version and the commit it was built from
                          (also elector --version)
  elector help            print this help
`)
}

// usageExit reports a flag parsing error of command and returns the exit
// code: 0 for --help, which pflag has answered with the usage, else 2.
func usageExit(stderr io.Writer, command string, err error) int {
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "elector %s: %v\nRun 'elector %s --help' for the flags.\n", command, err, command)
	return 2
}
