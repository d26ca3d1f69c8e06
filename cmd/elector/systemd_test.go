package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// installedBinary is where the systemd units expect elector.
const installedBinary = "/usr/local/bin/elector"

// TestSystemdUnitsVerify runs `systemd-analyze verify` on the units in
// deploy/systemd, with the built elector in place of the installed one (the
// check needs the program to exist): any complaint, even one systemd only
// warns about (an unknown key, a bad value it ignores), fails the test.
func TestSystemdUnitsVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the elector binary")
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is needed to check deploy/systemd and CI must have it (Debian package systemd)")
		}
		t.Skip("systemd-analyze not installed")
	}
	bin, err := builtElector()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	units, err := filepath.Glob("../../deploy/systemd/*.service")
	if err != nil || len(units) == 0 {
		t.Fatalf("no units in deploy/systemd (%v)", err)
	}
	dir := t.TempDir()
	var names []string
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.Contains(s, "ExecStart="+installedBinary+" ") {
			t.Fatalf("%s does not start %s", u, installedBinary)
		}
		s = strings.ReplaceAll(s, installedBinary, bin)
		// The environment files are the operator's; the check needs none.
		s = regexp.MustCompile(`(?m)^EnvironmentFile=([^-])`).ReplaceAllString(s, "EnvironmentFile=-$1")
		name := filepath.Base(u)
		if strings.HasSuffix(name, "@.service") {
			name = strings.TrimSuffix(name, "@.service") + "@billing.service" // an instance
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, "./"+name)
	}
	cmd := exec.Command("systemd-analyze", append([]string{"verify", "--man=no"}, names...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestSystemdGatewayUnitLoadsItsConfig parses the gateway unit's ExecStart
// with serve's flags and loads the configuration it names, the example in
// deploy/systemd, with the unit's environment.
func TestSystemdGatewayUnitLoadsItsConfig(t *testing.T) {
	b, err := os.ReadFile("../../deploy/systemd/elector.service")
	if err != nil {
		t.Fatal(err)
	}
	exec := regexp.MustCompile(`(?m)^ExecStart=` + regexp.QuoteMeta(installedBinary) + ` serve (.*)$`).FindSubmatch(b)
	if exec == nil {
		t.Fatal("elector.service has no ExecStart of elector serve")
	}
	example, err := os.ReadFile("../../deploy/systemd/elector.yaml")
	if err != nil {
		t.Fatal(err)
	}
	isolate(t)
	for _, m := range regexp.MustCompile(`(?m)^Environment=(ELECTOR_\w+)=(\S+)$`).FindAllSubmatch(b, -1) {
		t.Setenv(string(m[1]), string(m[2]))
	}
	// The token files the example names stand in a temporary directory.
	tokens := t.TempDir()
	config := strings.ReplaceAll(string(example), "/etc/elector/", tokens+"/")
	for _, m := range regexp.MustCompile(`(?m)^\s+file:\s*(\S+)`).FindAllStringSubmatch(config, -1) {
		if err := os.WriteFile(m[1], []byte("stand-in-token-0123456789"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	local := filepath.Join(t.TempDir(), "elector.yaml")
	if err := os.WriteFile(local, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(string(exec[1]))
	fs := newServeFlags(os.Stderr)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("serve %q: %v", args, err)
	}
	if path, _ := fs.GetString("config"); path != "/etc/elector/elector.yaml" {
		t.Fatalf("the unit reads %s; the example is for /etc/elector/elector.yaml", path)
	}
	if err := fs.Set("config", local); err != nil {
		t.Fatal(err)
	}
	l, err := loadConfig(fs)
	if err != nil {
		t.Fatalf("deploy/systemd/elector.yaml does not load: %v", err)
	}
	if l.Config.Backend.Embedded.DataDir != "/var/lib/elector" || len(l.Config.Auth.Tokens) == 0 {
		t.Fatalf("the unit's gateway stores in %q with %d tokens; want /var/lib/elector (its StateDirectory) and tokens",
			l.Config.Backend.Embedded.DataDir, len(l.Config.Auth.Tokens))
	}
}
