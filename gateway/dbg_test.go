package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

type hd struct {
	gateway.Backend
	gateway.Header
}

func TestDbg(t *testing.T) {
	b := memory.New()
	go b.Run(t.Context())
	b.Campaign(context.Background(), "x", gateway.Candidacy{ID: "e", TTL: time.Minute, TokenHash: "h"}, gateway.Settings{})
	gw := gateway.New(hd{b, b}, gateway.Config{HubEvents: 16})
	go gw.Run(t.Context())
	for {
		known, err := gw.CaughtUp(context.Background())
		if known && err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	ch, err := gw.Watch(t.Context(), "x", "")
	t.Log(err)
	b.Campaign(context.Background(), "x", gateway.Candidacy{ID: "a", TTL: time.Minute, TokenHash: "h"}, gateway.Settings{})
	select {
	case e, ok := <-ch:
		t.Log(e, ok)
	case <-time.After(time.Second):
		t.Fatal("nothing")
	}
}
