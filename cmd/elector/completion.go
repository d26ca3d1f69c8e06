package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// completionShells are the shells `elector completion` writes a script for.
var completionShells = []string{"bash", "zsh", "fish"}

// flagWords are a command's flags as typed: --name, and -x for a
// shorthand; --help always.
func flagWords(c command) []string {
	out := []string{"--help"}
	if c.flags == nil {
		return out
	}
	fs := c.flags()
	fs.VisitAll(func(f *pflag.Flag) {
		out = append(out, "--"+f.Name)
		if f.Shorthand != "" {
			out = append(out, "-"+f.Shorthand)
		}
	})
	slices.Sort(out)
	return out
}

// valueFlags are the words of a command's flags that take a value
// (--output, -o), space-separated with a space at each end, so that a
// script can test " $word " against them: after one of them, the next word
// is the flag's value, not another flag.
func valueFlags(c command) string {
	out := []string{""}
	if c.flags != nil {
		c.flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() == "bool" {
				return
			}
			out = append(out, "--"+f.Name)
			if f.Shorthand != "" {
				out = append(out, "-"+f.Shorthand)
			}
		})
	}
	return strings.Join(append(out, ""), " ")
}

// runCompletion is `elector completion bash|zsh|fish`: it prints the
// completion script for the shell. Exit codes: 0, or 2 for another shell.
func runCompletion(args []string, stdout, stderr io.Writer) int {
	const about = "Prints the completion script for the shell:\n" +
		"  bash: source <(elector completion bash)   (or save it in /etc/bash_completion.d/elector)\n" +
		"  zsh:  elector completion zsh > \"${fpath[1]}/_elector\"\n" +
		"  fish: elector completion fish > ~/.config/fish/completions/elector.fish"
	args, code, ok := plainFlags("completion", "bash|zsh|fish", about, args, 1, stderr)
	if !ok {
		return code
	}
	if len(args) != 1 || !slices.Contains(completionShells, args[0]) {
		fmt.Fprintf(stderr, "Usage: elector completion bash|zsh|fish\n\n%s\n", about)
		return 2
	}
	cs := visibleCommands()
	switch args[0] {
	case "bash":
		writeBash(stdout, cs)
	case "zsh":
		writeZsh(stdout, cs)
	case "fish":
		writeFish(stdout, cs)
	}
	return 0
}

// argWords are what a command completes after its name: its words, else
// its flags.
func argWords(c command) string {
	if c.words != nil {
		return strings.Join(c.words, " ")
	}
	return strings.Join(flagWords(c), " ")
}

func writeBash(w io.Writer, cs []command) {
	var names []string
	for _, c := range cs {
		names = append(names, c.name)
	}
	fmt.Fprintf(w, `# bash completion for elector: source <(elector completion bash)
_elector() {
	local cur=${COMP_WORDS[COMP_CWORD]} words="" values=""
	if ((COMP_CWORD == 1)); then
		COMPREPLY=($(compgen -W %q -- "$cur"))
		return
	fi
	local i
	for ((i = 2; i < COMP_CWORD; i++)); do
		# After "run ... --", the words are the supervised command's.
		[[ ${COMP_WORDS[1]} == run && ${COMP_WORDS[i]} == -- ]] && return
	done
	case ${COMP_WORDS[1]} in
`, strings.Join(names, " "))
	for _, c := range cs {
		if c.words != nil {
			fmt.Fprintf(w, "\t%s) ((COMP_CWORD == 2)) && words=%q ;;\n", c.name, argWords(c))
		} else {
			fmt.Fprintf(w, "\t%s) words=%q values=%q ;;\n", c.name, argWords(c), valueFlags(c))
		}
	}
	fmt.Fprint(w, `	esac
	# After a flag that takes a value, the word is that value: leave it to
	# the shell's default completion (file names).
	[[ $values == *" ${COMP_WORDS[COMP_CWORD-1]} "* ]] && return
	COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _elector elector
`)
}

func writeZsh(w io.Writer, cs []command) {
	fmt.Fprint(w, "#compdef elector\n# zsh completion for elector: elector completion zsh > \"${fpath[1]}/_elector\"\n_elector() {\n\tlocal -a cmds cand\n\tlocal values=\"\"\n\tcmds=(\n")
	for _, c := range cs {
		fmt.Fprintf(w, "\t\t%s\n", singleQuote(c.name+":"+c.summary))
	}
	// $words is zsh's array of the command line, $CURRENT the word
	// being completed.
	fmt.Fprint(w, "\t)\n\tif ((CURRENT == 2)); then\n\t\t_describe command cmds\n\t\treturn\n\tfi\n\tcase ${words[2]} in\n")
	for _, c := range cs {
		if c.words != nil {
			fmt.Fprintf(w, "\t%s) ((CURRENT == 3)) && cand=(%s) ;;\n", c.name, argWords(c))
		} else {
			fmt.Fprintf(w, "\t%s) cand=(%s) values=%s ;;\n", c.name, argWords(c), singleQuote(valueFlags(c)))
		}
	}
	// After a flag that takes a value, offer files only.
	fmt.Fprint(w, "\tesac\n\tif [[ $values == *\" ${words[CURRENT-1]} \"* ]]; then\n\t\t_files\n\t\treturn\n\tfi\n\tcompadd -a cand\n\t_files\n}\n_elector \"$@\"\n")
}

// singleQuote single-quotes s for zsh and fish.
func singleQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func writeFish(w io.Writer, cs []command) {
	fmt.Fprint(w, "# fish completion for elector: elector completion fish > ~/.config/fish/completions/elector.fish\ncomplete -c elector -f\n")
	var names []string
	for _, c := range cs {
		names = append(names, c.name)
	}
	all := strings.Join(names, " ")
	for _, c := range cs {
		fmt.Fprintf(w, "complete -c elector -n 'not __fish_seen_subcommand_from %s' -a %s -d %s\n", all, c.name, singleQuote(c.summary))
	}
	for _, c := range cs {
		cond := singleQuote("__fish_seen_subcommand_from " + c.name)
		for _, word := range c.words {
			fmt.Fprintf(w, "complete -c elector -n %s -a %s\n", cond, word)
		}
		if c.flags == nil {
			continue
		}
		c.flags().VisitAll(func(f *pflag.Flag) {
			line := fmt.Sprintf("complete -c elector -n %s -l %s", cond, f.Name)
			if f.Shorthand != "" {
				line += " -s " + f.Shorthand
			}
			if f.Value.Type() != "bool" {
				line += " -r -F" // takes a value; offer files, as for --config
			}
			usage, _, _ := strings.Cut(f.Usage, "\n")
			fmt.Fprintf(w, "%s -d %s\n", line, singleQuote(usage))
		})
	}
}
