package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// completionScript returns what `elector completion shell` prints.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"completion", shell}, &out, &errOut); code != 0 {
		t.Fatalf("elector completion %s: exit %d: %s", shell, code, errOut.String())
	}
	return out.String()
}

// TestBashCompletionCompletesCommandsAndFlags loads the bash script into a
// real bash and asks it what it completes, as bash asks on a TAB.
func TestBashCompletionCompletesCommandsAndFlags(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	script := filepath.Join(t.TempDir(), "elector.bash")
	if err := os.WriteFile(script, []byte(completionScript(t, "bash")), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		line string // the words typed; the last is completed
		want string // the completions, space-separated
	}{
		{"elector se", "serve"},
		{"elector c", "campaign candidates completion"},
		{"elector serve --conf", "--config"},
		{"elector serve --embedded-r", "--embedded-routes"},
		{"elector heartbeat --to", "--token"},
		{"elector healthcheck --u", "--url"},
		{"elector token ", "new hash"},
		{"elector completion f", "fish"},
		{"elector run --election x -- --ele", ""}, // the supervised command's words
		{"elector bench --fail", "--failover"},
		{"elector bench -", "--api-token --burst --burst-workers --candidates --connections --duration --elections --failover --gateway --help --keep-elections --output --prefix --progress --readers --subscribers --timeout --ttl -c -d -k -m -n -o"},
		{"elector transfer --can", "--cancel"},
		{"elector campaign --output ", ""},              // a flag's value, not a flag name
		{"elector campaign -o --", ""},                  // the same after a shorthand
		{"elector serve --log-level --", ""},            // the same for serve
		{"elector campaign --ttl 1m --out", "--output"}, // after the value, flags again
		{"elector healthcheck --insecure --u", "--url"}, // a bool flag takes no value
		{"elector help lea", "leader"},
		{"elector help pro", "proxy"},
		{"elector proxy --me", "--metadata-key"},
		{"elector run --health-", "--health-command --health-failures --health-timeout --health-url"},
		{"elector run --proxy-", "--proxy-listen --proxy-metadata-key"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			words := strings.Fields(tt.line)
			if strings.HasSuffix(tt.line, " ") {
				words = append(words, "")
			}
			var quoted []string
			for _, w := range words {
				quoted = append(quoted, "'"+w+"'")
			}
			prog := "source " + script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\n" +
				"COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n_elector\necho \"${COMPREPLY[*]}\"\n"
			out, err := exec.Command("bash", "-c", prog).CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tt.want {
				t.Fatalf("completes %q; want %q", got, tt.want)
			}
		})
	}
}

// TestCompletionScriptsParse checks the zsh and fish scripts with the
// shells' own syntax check, where the shell is installed, and that each
// names every command; both are also asked what they complete.
func TestCompletionScriptsParse(t *testing.T) {
	for _, tt := range []struct{ shell, check string }{{"zsh", "-n"}, {"fish", "--no-execute"}} {
		t.Run(tt.shell, func(t *testing.T) {
			script := completionScript(t, tt.shell)
			for _, c := range visibleCommands() {
				if !strings.Contains(script, c.name) {
					t.Errorf("the %s script does not name %s", tt.shell, c.name)
				}
			}
			if _, err := exec.LookPath(tt.shell); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is needed to check its completion script and CI must install it", tt.shell)
				}
				t.Skipf("%s not installed", tt.shell)
			}
			file := filepath.Join(t.TempDir(), "elector."+tt.shell)
			if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(tt.shell, tt.check, file).CombinedOutput(); err != nil {
				t.Fatalf("%s %s: %v\n%s", tt.shell, tt.check, err, out)
			}
			if tt.shell == "zsh" {
				// The completion system's functions stand in as printers:
				// what _elector offers for the words typed so far.
				prog := `compadd() { [[ $1 == -a ]] && (( ${#${(P)2}} )) && print -l -- ${(P)2} }
_files() { }
_describe() { print -l -- ${(P)2} }
source ` + file + `
words=(elector serve --conf); CURRENT=3; _elector | grep -x -- --config
words=(elector token ""); CURRENT=3; _elector | paste -sd, -
words=(elector se); CURRENT=2; _elector | grep '^serve:'
words=(elector campaign --output ""); CURRENT=4; _elector | wc -l | tr -d ' '
`
				out, err := exec.Command("zsh", "-f", "-c", prog).CombinedOutput()
				if err != nil || string(out) != "--config\nnew,hash\nserve:start the gateway\n0\n" {
					t.Fatalf("zsh completes %q (%v); want --config, then new and hash, then serve, then no flag for a flag's value", out, err)
				}
				return
			}
			// fish can say what it would complete.
			cmd := exec.Command("fish", "-c", "source "+file+`; complete -C "elector serve --conf"; complete -C "elector token "`)
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "--config\t") || !strings.Contains(string(out), "\nhash\nnew\n") {
				t.Fatalf("fish completes %q (%v); want --config, then hash and new", out, err)
			}
		})
	}
}

func TestCompletionRefusesOtherShells(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"completion", "powershell"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "bash|zsh|fish") {
		t.Fatalf("completion powershell: exit %d, %q", code, errOut.String())
	}
}
