package elector_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/servertest"
)

// The Go client is a module of its own (client/go.mod) so that importing
// it does not raise a program's go line to the server's. The repository's
// go.work joins the two for development: `go run ./cmd/elector` and the
// server's imports of the client use client/ as it is in the checkout.
// `go test ./...` does not descend into another module, so the tests
// below run the client module's tests and check how the modules are
// wired.

const (
	clientModule = "github.com/electorhq/elector/client"
	// maxClientMinor is the newest go line the client module may have,
	// 1.22: a program on Go 1.22 must be able to import it.
	maxClientMinor = "22"
)

// TestClientModuleTests runs the client module's tests as a module of its
// own (GOWORK=off, nothing downloaded), against an elector built from
// this checkout.
func TestClientModuleTests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the elector binary and runs the client's tests")
	}
	// Read every file of the client, so that go test's cache of this
	// test's result ends when one of them changes.
	err := filepath.WalkDir("client", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			_, err = os.ReadFile(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "elector")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/elector").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = "client"
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "ELECTOR_BINARY="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test ./... in client/: %v\n%s", err, out)
	}
	t.Logf("go test ./... in client/:\n%s", out)
}

// TestREADMEGoClient builds the README's Go program in a module of its
// own whose go.mod says go 1.22: its go line is the same after go mod
// tidy, go build and go vet (whose stdversion check refuses a standard
// library API newer than the client's go line). The program then leads
// against a gateway and, on Ctrl-C (SIGINT), resigns and exits. The
// control builds it against a copy of the client that claims the
// server's go line: that one changes the program's.
func TestREADMEGoClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command on a temporary module")
	}
	program := readmeBlock(t, "go-client")
	checkout, err := filepath.Abs("client")
	if err != nil {
		t.Fatal(err)
	}
	v := goLine(t, checkout)
	if m := regexp.MustCompile(`^1\.(\d+)$`).FindStringSubmatch(v); m == nil || len(m[1]) > 2 || m[1] > maxClientMinor {
		t.Fatalf("client/go.mod says go %s; want at most go 1.%s, no patch release and no toolchain line", v, maxClientMinor)
	}
	newer := t.TempDir()
	if err := os.CopyFS(newer, os.DirFS(checkout)); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "mod", "edit", "-go=1.26.0", filepath.Join(newer, "go.mod")).CombinedOutput(); err != nil {
		t.Fatalf("go mod edit: %v\n%s", err, out)
	}

	t.Run("control: a client on go 1.26", func(t *testing.T) {
		t.Parallel()
		dir, log := buildConsumer(t, newer, program, false)
		if got := goLine(t, dir); got == "1.22" {
			t.Fatalf("the program's go line stayed 1.22 with a client on go 1.26:\n%s", log)
		}
	})
	t.Run("the client module", func(t *testing.T) {
		t.Parallel()
		url := servertest.Start(t).URL
		dir, log := buildConsumer(t, checkout, strings.ReplaceAll(program, "http://127.0.0.1:8080", url), true)
		if got := goLine(t, dir); got != "1.22" {
			t.Fatalf("the program's go.mod says go %q after tidy, build and vet; want go 1.22 kept\n%s", got, log)
		}
		cmd := exec.Command(filepath.Join(dir, "program"), "node-a")
		cmd.Dir = dir
		out := &output{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		out.waitFor(t, "leading with term 1")
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the program after Ctrl-C: %v\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), "stopped: <nil>") {
			t.Fatalf("the program printed:\n%s\nwant it to stop with no error", out.String())
		}
		if _, err := client.New(url).Leader(context.Background(), "billing"); !errors.Is(err, client.ErrNoLeader) {
			t.Fatalf("leader after the program's Ctrl-C: %v; want none (it resigned)", err)
		}
	})
}

// goLine is the go line of dir's go.mod, and its toolchain line if any.
func goLine(t *testing.T, dir string) string {
	t.Helper()
	var m struct{ Go, Toolchain string }
	out, err := exec.Command("go", "mod", "edit", "-json", filepath.Join(dir, "go.mod")).Output()
	if err != nil || json.Unmarshal(out, &m) != nil {
		t.Fatalf("go mod edit -json %s: %v", dir, err)
	}
	return strings.TrimSpace(m.Go + " " + m.Toolchain)
}

// buildConsumer writes program into a module on go 1.22 that requires
// the client module in clientDir, and runs go mod tidy, go build (into
// "program") and go vet there, offline and with this Go only (GOTOOLCHAIN
// =local: the go line may not be raised by fetching a newer toolchain
// either). It returns the directory and what the go commands printed;
// with must, a failing command fails the test.
func buildConsumer(t *testing.T, clientDir, program string, must bool) (string, string) {
	t.Helper()
	dir := t.TempDir()
	gomod := "module example.com/consumer\n\ngo 1.22\n\nrequire " + clientModule + " v0.1.0\n\nreplace " + clientModule + " => " + clientDir + "\n"
	for name, text := range map[string]string{"go.mod": gomod, "main.go": program} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log strings.Builder
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", "program", "."}, {"vet", ".", clientModule}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		log.WriteString("$ go " + strings.Join(args, " ") + "\n" + string(out))
		if err != nil && must {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, log.String())
		}
	}
	return dir, log.String()
}

// TestClientModuleWiring checks what ties the two modules together: the
// server's go.mod requires the client at one version and replaces
// nothing (`go install …/cmd/elector@version` refuses a go.mod with
// replace directives), go.work uses both modules and points that version
// at ./client, and the client requires nothing, the server least of all.
func TestClientModuleWiring(t *testing.T) {
	editJSON := func(args ...string) map[string]json.RawMessage {
		t.Helper()
		out, err := exec.Command("go", args...).Output()
		var m map[string]json.RawMessage
		if err != nil || json.Unmarshal(out, &m) != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		return m
	}
	type modVersion struct{ Path, Version string }
	decode := func(raw json.RawMessage, v any) {
		t.Helper()
		if len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, v); err != nil {
				t.Fatal(err)
			}
		}
	}

	server := editJSON("mod", "edit", "-json", "go.mod")
	var requires []modVersion
	var replaces []struct{ Old, New modVersion }
	decode(server["Require"], &requires)
	decode(server["Replace"], &replaces)
	if len(replaces) > 0 {
		t.Errorf("go.mod has replace directives %+v; go install …/cmd/elector@version would refuse the module", replaces)
	}
	version := ""
	for _, r := range requires {
		if r.Path == clientModule {
			version = r.Version
		}
	}
	if version == "" {
		t.Fatalf("go.mod does not require %s", clientModule)
	}

	work := editJSON("work", "edit", "-json", "go.work")
	var uses []struct{ DiskPath string }
	decode(work["Use"], &uses)
	decode(work["Replace"], &replaces)
	var dirs []string
	for _, u := range uses {
		dirs = append(dirs, u.DiskPath)
	}
	if strings.Join(dirs, " ") != ". ./client" {
		t.Errorf("go.work uses %q, want . and ./client", dirs)
	}
	if len(replaces) != 1 || replaces[0].Old != (modVersion{clientModule, version}) || replaces[0].New.Path != "./client" {
		t.Errorf("go.work replaces %+v; want %s %s (the version go.mod requires) => ./client", replaces, clientModule, version)
	}

	client := editJSON("mod", "edit", "-json", "client/go.mod")
	var module modVersion
	requires = nil
	decode(client["Module"], &module)
	decode(client["Require"], &requires)
	if module.Path != clientModule || len(requires) > 0 {
		t.Errorf("client/go.mod is module %q requiring %+v; want %s requiring nothing", module.Path, requires, clientModule)
	}
}
