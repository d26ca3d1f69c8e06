package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

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
	c, ok := findCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "elector: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

// usage prints the commands of the command table.
func usage(w io.Writer) {
	const column = 24 // where the summaries start
	fmt.Fprint(w, "elector is an HTTP leader-election gateway.\n\nUsage:\n")
	for _, c := range visibleCommands() {
		line := "elector " + c.name
		if c.synopsis != "" {
			line += " " + strings.TrimSpace(c.synopsis)
		}
		if len(line) < column-2 {
			fmt.Fprintf(w, "  %-*s%s\n", column, line, c.summary)
		} else {
			fmt.Fprintf(w, "  %s\n  %*s%s\n", line, column, "", c.summary)
		}
	}
	fmt.Fprint(w, "\nRun 'elector COMMAND --help' for a command's flags; the gateway clients\n(campaign … transfer) take --output json.\n")
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
