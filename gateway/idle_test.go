package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

// TestIdleElectionsAreDeletedAndBusyOnesKept runs in synctest's fake time:
// an empty election idle for longer than the expiry is deleted, one with a
// candidate is kept, and one that was busy recently is kept until it too
// has been idle long enough.
func TestIdleElectionsAreDeletedAndBusyOnesKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = time.Hour
		b := memory.New()
		gw := gateway.New(b, gateway.Config{Logger: slog.New(slog.DiscardHandler), IdleElectionExpiry: idle})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = gw.Run(ctx) }()
		defer func() { cancel(); <-done }()
		synctest.Wait()

		campaignThenResign := func(election string) {
			_, tok, err := gw.Campaign(ctx, election, gateway.CampaignRequest{ID: "a", TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if err := gw.Resign(ctx, election, "a", tok); err != nil {
				t.Fatal(err)
			}
		}
		exists := func(e string) bool {
			_, err := gw.Election(ctx, e)
			if err != nil && !errors.Is(err, gateway.ErrElectionNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}
		campaignThenResign("emptied")
		campaignThenResign("busy")
		_, tok, err := gw.Campaign(ctx, "occupied", gateway.CampaignRequest{ID: "a", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		// Every quarter of an hour for two hours: "occupied" heartbeats,
		// "busy" is busy again at half past.
		for q := 1; q <= 8; q++ {
			time.Sleep(idle / 4)
			if _, err := gw.Heartbeat(ctx, "occupied", "a", tok); err != nil {
				t.Fatal(err)
			}
			if q == 2 {
				campaignThenResign("busy")
			}
			synctest.Wait()
			switch q {
			case 5: // 1h15
				if exists("emptied") || !exists("busy") {
					t.Fatalf("at 1h15: emptied exists %v, busy exists %v; want only busy", exists("emptied"), exists("busy"))
				}
			case 7: // 1h45
				if exists("busy") {
					t.Fatal("at 1h45, busy (idle since 0h30) still exists")
				}
			}
		}
		if !exists("occupied") {
			t.Fatal("an election with a candidate was deleted")
		}
		// Created again, it is a new election with terms above the old.
		st, _, err := gw.Campaign(ctx, "emptied", gateway.CampaignRequest{ID: "b", TTL: time.Hour})
		if err != nil || st.Term < 2 {
			t.Fatalf("campaign after deletion: term %d, %v; want a term above the deleted election's 1", st.Term, err)
		}
	})
}
