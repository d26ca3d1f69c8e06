package elector_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod", "ELECTOR_BINARY="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test ./... in client/: %v\n%s", err, out)
	}
	t.Logf("go test ./... in client/:\n%s", out)
}

// TestClientModuleKeepsTheConsumersGoLine builds a program whose go.mod
// says go 1.22 and imports the client: its go line is the same after go
// mod tidy, go build and go vet (whose stdversion check refuses a standard
// library API newer than the client's go line). The second case is the
// control: a client that needed the server's Go would change it.
func TestClientModuleKeepsTheConsumersGoLine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command on a temporary module")
	}
	goVersion := func(t *testing.T, dir string) string {
		t.Helper()
		var m struct{ Go, Toolchain string }
		out, err := exec.Command("go", "mod", "edit", "-json", filepath.Join(dir, "go.mod")).Output()
		if err != nil || json.Unmarshal(out, &m) != nil {
			t.Fatalf("go mod edit -json %s: %v", dir, err)
		}
		return strings.TrimSpace(m.Go + " " + m.Toolchain)
	}
	checkout, err := filepath.Abs("client")
	if err != nil {
		t.Fatal(err)
	}
	v := goVersion(t, checkout)
	if m := regexp.MustCompile(`^1\.(\d+)$`).FindStringSubmatch(v); m == nil || len(m[1]) > 2 || m[1] > maxClientMinor {
		t.Fatalf("client/go.mod says go %s; want at most go 1.%s, no patch release and no toolchain line", v, maxClientMinor)
	}
	// A copy of the client that claims the server's go line.
	newer := t.TempDir()
	if err := os.CopyFS(newer, os.DirFS(checkout)); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "mod", "edit", "-go=1.26.0", filepath.Join(newer, "go.mod")).CombinedOutput()
	if err != nil {
		t.Fatalf("go mod edit: %v\n%s", err, out)
	}

	tests := []struct {
		name, client string
		keeps        bool
	}{
		{"the client module", checkout, true},
		{"control: a client on go 1.26", newer, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			gomod := "module example.com/consumer\n\ngo 1.22\n\nrequire " + clientModule + " v0.1.0\n\nreplace " + clientModule + " => " + tt.client + "\n"
			program := `package main

import (
	"fmt"
	"time"

	"github.com/electorhq/elector/client"
)

func main() {
	_, err := client.NewCandidacy(client.CandidacyConfig{Gateways: []string{"http://127.0.0.1:8080"}, Election: "e", ID: "a"})
	fmt.Println(err, client.StepDownMargin(10*time.Second))
}
`
			for name, text := range map[string]string{"go.mod": gomod, "main.go": program} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var log strings.Builder
			for _, args := range [][]string{{"mod", "tidy"}, {"build", "./..."}, {"vet", "./...", clientModule}} {
				cmd := exec.Command("go", args...)
				cmd.Dir = dir
				// Offline and with this Go only: the go line may not be
				// raised by fetching a newer toolchain either.
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
				out, err := cmd.CombinedOutput()
				log.WriteString("$ go " + strings.Join(args, " ") + "\n" + string(out))
				if err != nil && tt.keeps {
					t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, log.String())
				}
			}
			got := goVersion(t, dir)
			t.Logf("the consumer's go line after tidy, build and vet: %s", got)
			if kept := got == "1.22"; kept != tt.keeps {
				t.Fatalf("the consumer's go.mod says go %q after tidy and build, want go 1.22 kept: %v\n%s", got, tt.keeps, log.String())
			}
		})
	}
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
