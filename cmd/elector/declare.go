package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/electorhq/elector/backends/etcd"
)

// declareTimeout bounds declare-upgraded: the declaration is one etcd
// transaction and this replica's cache seeing it.
const declareTimeout = 30 * time.Second

// newDeclareFlags is serve's flag set (the command reads the same
// configuration as the replicas it speaks for) with its own usage text.
func newDeclareFlags(stderr io.Writer) *pflag.FlagSet {
	fs := newServeFlags(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: elector declare-upgraded [flags]\n\n"+
			"Declares, under the etcd backend's prefix (<prefix>/_elector/version), that every replica\n"+
			"using it runs this version or a later one; campaigns into empty elections are then one\n"+
			"etcd transaction instead of two. Run it once no replica of an earlier version runs or will\n"+
			"start: those would misread what is written after it. It never lowers a declared version, and\n"+
			"a replica older than the declaration refuses to serve (its /readyz fails) rather than misread.\n"+
			"It reads the configuration as serve does: each setting from its flag, else its ELECTOR_*\n"+
			"environment variable, else the config file, else its default.\n\nFlags:\n%s", fs.FlagUsages())
	}
	return fs
}

// runDeclare is `elector declare-upgraded`: exit 0 once the declaration
// is in etcd (or was already), 1 when etcd does not take it, 2 for a
// configuration that is not of the etcd backend or not valid.
func runDeclare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const name = "declare-upgraded"
	fs := newDeclareFlags(stderr)
	if err := fs.Parse(args); err != nil {
		return usageExit(stderr, name, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "elector %s: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	l, err := loadConfig(fs)
	if err != nil {
		fmt.Fprintf(stderr, "elector %s: %v\n", name, err)
		return 2
	}
	log := newLogger(l.Config.Log, stderr)
	cfg, err := l.Config.serverConfig(log)
	if err != nil {
		fmt.Fprintf(stderr, "elector %s: %v\n", name, err)
		return 2
	}
	if kind := cfg.Backend.Kind; kind != "etcd" {
		fmt.Fprintf(stderr, "elector %s: backend.kind is %q; data versions are declared only on the etcd backend (set backend.kind: etcd, or --backend-kind etcd, and its endpoints)\n", name, kind)
		return 2
	}
	ecfg := cfg.Backend.Etcd
	ecfg.Logger = log.With(slog.String("component", "etcd"))
	b, err := etcd.New(ecfg)
	if err != nil {
		fmt.Fprintf(stderr, "elector %s: %v\n", name, err)
		if errors.Is(err, errConfig) {
			return 2
		}
		return 1
	}
	defer b.Close()
	dctx, cancel := context.WithTimeout(ctx, declareTimeout)
	defer cancel()
	if err := b.DeclareUpgraded(dctx); err != nil {
		fmt.Fprintf(stderr, "elector %s: etcd at %v did not take the declaration: %v\n", name, ecfg.Endpoints, err)
		return 1
	}
	fmt.Fprintf(stdout, "declared in %s: every replica on this prefix runs data version %d or later\n", b.VersionKey(), etcd.DataVersion)
	return 0
}
