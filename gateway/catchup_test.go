package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/electorhq/elector/gateway"
)

func TestWaitCaughtUp(t *testing.T) {
	notYet := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	at := func(seen uint64, err error) func() (uint64, error) {
		return func() (uint64, error) { return seen, err }
	}
	stopped := errors.New("the watch is not running")
	tests := []struct {
		name      string
		wait      func(context.Context) error
		delivered func() (uint64, error)
		want      string // "" for nil
	}{
		{"there", func(context.Context) error { return nil }, at(0, stopped), ""},
		{"behind", notYet, at(7, nil), "delivered up to revision 7, the backend is at 10 (3 behind)"},
		{"there as the grace ended", notYet, at(10, nil), ""},
		{"cannot tell", notYet, at(0, stopped), stopped.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				err := gateway.WaitCaughtUp(context.Background(), "revision", 10, tt.wait, tt.delivered)
				switch {
				case tt.want == "" && err != nil:
					t.Fatalf("WaitCaughtUp = %v, want nil", err)
				case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
					t.Fatalf("WaitCaughtUp = %v, want %q", err, tt.want)
				case tt.name == "behind" && !errors.Is(err, gateway.ErrUnavailable):
					t.Fatalf("WaitCaughtUp = %v, want ErrUnavailable", err)
				}
				if d := time.Since(start); d > gateway.CatchUpGrace {
					t.Fatalf("waited %s, more than the grace", d)
				}
			})
		})
	}
}
