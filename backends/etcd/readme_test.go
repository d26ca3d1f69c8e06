package etcd_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// readmeDeclaration is the README's etcdctl command that declares every
// replica upgraded, with its key's prefix and its value.
var readmeDeclaration = regexp.MustCompile(`(?m)^etcdctl put (\S+)/_elector/version '(\{[^']*\})'`)

// TestREADMEDeclarationMakesCampaignsOneWrite: the command the README
// gives operators, put on a prefix, is the declaration this version reads:
// a campaign into an empty election becomes one transaction.
func TestREADMEDeclarationMakesCampaignsOneWrite(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := readmeDeclaration.FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no `etcdctl put <prefix>/_elector/version '{...}'` line")
	}
	if string(m[1]) != "elector" {
		t.Fatalf("the README declares on prefix %q, want the default prefix elector (configs/etcd.yaml)", m[1])
	}
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "readme")
	ctx := context.Background()
	if _, err := b.Client().Put(ctx, "readme/_elector/version", string(m[2])); err != nil {
		t.Fatal(err)
	}
	n, err := b.CountRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	eventually.NoError(t, time.Minute, "a campaign in one transaction", func() error {
		i++
		n.Take()
		st, err := b.Campaign(ctx, fmt.Sprintf("e%d", i), gateway.Candidacy{ID: "a", TTL: 20 * time.Second, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
		if err != nil {
			return err
		}
		if got := n.Take()["txn"]; st.Candidate.State != gateway.StateLeader || got != 1 {
			return fmt.Errorf("campaign %d: %s in %d transactions", i, st.Candidate.State, got)
		}
		return nil
	})
	if !strings.Contains(string(readme), "refuses to campaign") {
		t.Error("the README no longer says what a replica older than the declaration does")
	}
}
