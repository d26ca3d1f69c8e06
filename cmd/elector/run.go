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
		unknownCommand(stderr, args[0])
		return 2
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

// unknownCommand says that name is no command, and which it may have
// meant.
func unknownCommand(w io.Writer, name string) {
	if strings.HasPrefix(name, "-") {
		fmt.Fprintf(w, "elector: %q is not a command: flags go after the command, as in elector leader --election billing\n", name)
	} else {
		var names []string
		for _, c := range visibleCommands() {
			names = append(names, c.name)
		}
		fmt.Fprintf(w, "elector: unknown command %q", name)
		if s := suggest(name, names); s != "" {
			fmt.Fprintf(w, "; did you mean %q?", s)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Run 'elector help' for the list of commands.")
}

// runHelp is `elector help [COMMAND]`: the list of commands, or the help
// of one command, on stdout.
func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0 || (len(args) == 1 && (args[0] == "help" || args[0] == "--help" || args[0] == "-h")):
		usage(stdout)
		return 0
	case len(args) > 1:
		fmt.Fprintf(stderr, "elector help: want one command, got %q\n", strings.Join(args, " "))
		return 2
	}
	c, ok := findCommand(args[0])
	if !ok || c.hidden {
		unknownCommand(stderr, args[0])
		return 2
	}
	return c.run(ctx, []string{"--help"}, stdout, stdout)
}

// plainFlags parses the arguments of a command that takes no flags and at
// most maxArgs arguments, answering --help with usage (a command line, then a
// description). ok false means the command is done, with exit code code:
// 0 after --help, 2 for a flag or argument it does not take.
func plainFlags(name, synopsis, about string, args []string, maxArgs int, stderr io.Writer) (rest []string, code int, ok bool) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(stderr, "Usage: elector %s\n\n%s\n", strings.TrimSpace(name+" "+synopsis), about) }
	if err := fs.Parse(args); err != nil {
		return nil, usageExit(stderr, name, err), false
	}
	if fs.NArg() > maxArgs {
		fmt.Fprintf(stderr, "elector %s: unexpected argument %q\nRun 'elector %s --help' for its usage.\n", name, fs.Arg(maxArgs), name)
		return nil, 2, false
	}
	return fs.Args(), 0, true
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
	fmt.Fprintf(stderr, "elector %s: %v\nRun 'elector %s --help' for its usage.\n", command, err, command)
	return 2
}
