package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/electorhq/elector/internal/sidecar"
)

// command is one elector command: run dispatches on it, and the usage text
// and the completion scripts are made from it.
type command struct {
	name string
	// synopsis is what follows the name in the usage text; summary says
	// what the command does.
	synopsis, summary string
	// flags, if set, makes the command's flag set, whose flags completion
	// offers.
	flags func() *pflag.FlagSet
	// words are what the command takes as its first argument, for
	// completion.
	words []string
	// hidden keeps the command out of the usage text and completion.
	hidden bool
	// run runs the command with the arguments after its name and returns
	// the exit code.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands is elector's command table, in the order of the usage text.
func commands() []command {
	cs := []command{
		{name: "serve", synopsis: "[flags]", summary: "start the gateway",
			flags: func() *pflag.FlagSet { return newServeFlags(io.Discard) },
			run: func(ctx context.Context, args []string, _, stderr io.Writer) int {
				return runServe(ctx, args, stderr)
			}},
		{name: "run", synopsis: "[flags] [-- CMD ARGS]", summary: "campaign as a sidecar: run begin / end commands (and CMD) while leading",
			flags: func() *pflag.FlagSet { return newRunFlags(io.Discard, &sidecarConfig{}) },
			run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
				return runSidecar(ctx, args, os.Stdin, stdout, stderr)
			}},
		{name: "proxy", synopsis: "--election E --listen ADDR [flags]", summary: "forward HTTP requests to the current leader, for clients that do not campaign",
			flags: func() *pflag.FlagSet { return newProxyFlags(io.Discard, &proxyFlags{}) },
			run:   runProxy},
	}
	for _, cc := range clientCommands {
		cs = append(cs, command{name: cc.name, synopsis: "[flags]", summary: cc.summary,
			flags: func() *pflag.FlagSet { return newClientFlags(cc, io.Discard, &clientFlags{}) },
			run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
				return runClient(ctx, cc, args, stdout, stderr)
			}})
	}
	cs = append(cs,
		command{name: "bench", synopsis: "[--gateway URL[,URL…]] [flags]", summary: "drive a load of candidates, streams and reads; print throughput and latency",
			flags: func() *pflag.FlagSet { return newBenchFlags(io.Discard, &benchFlags{}) },
			run:   runBench},
		command{name: "declare-upgraded", synopsis: "[flags]", summary: "declare on the etcd prefix that every replica runs this version (one-transaction campaigns)",
			flags: func() *pflag.FlagSet { return newDeclareFlags(io.Discard) },
			run:   runDeclare},
		command{name: "healthcheck", synopsis: "[--url URL]", summary: "exit 0 if the gateway's /readyz answers 2xx, else 1",
			flags: func() *pflag.FlagSet { return newHealthcheckFlags(io.Discard, &healthcheckFlags{}) },
			run:   runHealthcheck},
		command{name: "token", synopsis: "new | hash", summary: "make an API token and its sha256, or hash one from stdin",
			words: []string{"new", "hash"},
			run: func(_ context.Context, args []string, stdout, stderr io.Writer) int {
				return runToken(args, os.Stdin, stdout, stderr)
			}},
		command{name: sidecar.GuardCommand, hidden: true,
			run: func(_ context.Context, args []string, _, stderr io.Writer) int { return sidecar.RunGuard(args, stderr) }},
		command{name: "completion", synopsis: "bash | zsh | fish", summary: "print a shell completion script",
			words: completionShells,
			run: func(_ context.Context, args []string, stdout, stderr io.Writer) int {
				return runCompletion(args, stdout, stderr)
			}},
		command{name: "version", summary: "print the version and the commit it was built from (also elector --version)",
			run: func(_ context.Context, args []string, stdout, stderr io.Writer) int {
				if _, code, ok := plainFlags("version", "", "Prints the release and, for a build from a git checkout, the commit.", args, 0, stderr); !ok {
					return code
				}
				fmt.Fprint(stdout, versionLine())
				return 0
			}},
		command{name: "help", synopsis: "[COMMAND]", summary: "print this help, or a command's",
			run: runHelp},
	)
	// help completes the commands' names.
	for i := range cs {
		if cs[i].name == "help" {
			for _, c := range cs {
				if !c.hidden {
					cs[i].words = append(cs[i].words, c.name)
				}
			}
		}
	}
	return cs
}

// visibleCommands are the commands that usage and completion show.
func visibleCommands() []command {
	var out []command
	for _, c := range commands() {
		if !c.hidden {
			out = append(out, c)
		}
	}
	return out
}

// aliases are other names of commands.
var aliases = map[string]string{"--version": "version", "-h": "help", "--help": "help"}

// findCommand returns the command named name (or one of its aliases).
func findCommand(name string) (command, bool) {
	if a, ok := aliases[name]; ok {
		name = a
	}
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}
