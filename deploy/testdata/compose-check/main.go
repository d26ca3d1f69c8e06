// Command compose-check loads Compose files as `docker compose config`
// does, with compose-go, the Compose Specification's reference library
// that the docker compose CLI is built on: each file is validated against
// the compose-spec JSON schema that compose-go embeds (checked with
// santhosh-tekuri/jsonschema), interpolated, normalized and checked for
// consistency (a depends_on, volume or network that names nothing fails).
// No Docker engine is needed.
//
//	go run . ../../compose/*.yaml
//
// Before the files it loads known-bad documents, so that a loader that
// accepts everything fails instead of passing silently. Exit status 1 on
// any problem.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/cli"
)

// bad are documents every Compose implementation must refuse.
var bad = map[string]string{
	"a misspelt key":             "services:\n  a:\n    image: x\n    portz: [\"80:80\"]\n",
	"a dependency on no service": "services:\n  a:\n    image: x\n    depends_on: [b]\n",
	"a volume declared nowhere":  "services:\n  a:\n    image: x\n    volumes: [\"data:/data\"]\n",
}

// load loads the Compose file at path as docker compose would.
func load(ctx context.Context, path string) (string, error) {
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithInterpolation(true), cli.WithNormalization(true), cli.WithConsistency(true),
		cli.WithResolvedPaths(true))
	if err != nil {
		return "", err
	}
	p, err := opts.LoadProject(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("project %s, services %v", p.Name, p.ServiceNames()), nil
}

func main() {
	ctx := context.Background()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: compose-check FILE.yaml...")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "compose-check")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	failed := false
	for what, doc := range bad {
		p := filepath.Join(dir, "compose.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := load(ctx, p); err == nil {
			fmt.Fprintf(os.Stderr, "FAIL the loader accepted %s\n", what)
			failed = true
		}
	}
	for _, path := range os.Args[1:] {
		got, err := load(ctx, path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "FAIL %s: %v\n", path, err)
			failed = true
			continue
		}
		fmt.Printf("ok %s: %s\n", path, got)
	}
	if failed {
		os.Exit(1)
	}
}
