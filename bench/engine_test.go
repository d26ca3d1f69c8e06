package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/internal/testnet"
)

// memoryGateway serves a gateway over a memory backend on loopback,
// without limits, until the test ends.
func memoryGateway(t *testing.T) string {
	t.Helper()
	return servertest.Start(t, servertest.NoLimits()).URL
}

func TestLoadObservesEveryOperationAndPausedCandidatesSendNothing(t *testing.T) {
	url := memoryGateway(t)
	var mu sync.Mutex
	byIndex := map[int][]Op{}
	events := 0
	l, err := New(Config{
		Gateways: []string{url}, Candidates: 4, Elections: 1, TTL: 3 * time.Second, Connections: 2,
		Subscribers: 1, Duration: 2500 * time.Millisecond, Prefix: "obs",
		Observe: func(op Op) {
			mu.Lock()
			defer mu.Unlock()
			byIndex[op.Index] = append(byIndex[op.Index], op)
		},
		ObserveEvent: func(int, client.Event, time.Time) {
			mu.Lock()
			defer mu.Unlock()
			events++
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Pause(3, time.Hour) // stopped from the start: it never campaigns
	sum, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if ops := byIndex[3]; len(ops) != 0 {
		t.Errorf("the paused candidate made %d operations: %+v", len(ops), ops)
	}
	for i := range 3 {
		ops := byIndex[i]
		if len(ops) < 3 || ops[0].Kind != Campaign || ops[1].Kind != Heartbeat || ops[len(ops)-1].Kind != Resign {
			t.Errorf("candidate %d: %+v, want a campaign, heartbeats, a resignation", i, ops)
		}
		for _, op := range ops {
			if op.Err != nil || op.Election != "obs-0" || op.End.Before(op.Start) {
				t.Errorf("candidate %d: %+v", i, op)
			}
		}
	}
	if events == 0 || sum.Resigned != 3 || sum.Leaders != 1 || sum.Errors.Total != 0 {
		t.Errorf("%d events, summary %+v", events, sum)
	}
}

// With Failover, candidates whose gateway never answers move to the next
// after one request that times out and stay there; without it they stay
// with it and never campaign.
func TestFailoverMovesCandidatesOffAGatewayThatHangs(t *testing.T) {
	for _, failover := range []bool{true, false} {
		t.Run(fmt.Sprintf("failover=%v", failover), func(t *testing.T) {
			t.Parallel()
			hung, url := "http://"+testnet.Silent(t), memoryGateway(t)
			var mu sync.Mutex
			byIndex := map[int][]Op{}
			l, err := New(Config{
				Gateways: []string{hung, url}, Failover: failover, Candidates: 4, Elections: 1,
				// A request has 2 s: the answering gateway is never that
				// slow, so no candidate leaves it again.
				TTL: 6 * time.Second, Connections: 4, Duration: 6500 * time.Millisecond, Timeout: 2 * time.Second,
				ResignWait: 5 * time.Second, Prefix: "fo",
				Observe: func(op Op) {
					mu.Lock()
					defer mu.Unlock()
					byIndex[op.Index] = append(byIndex[op.Index], op)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := l.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for i := range 4 {
				ops := byIndex[i]
				if i%2 == 1 || failover {
					// Candidates 1 and 3 start on the answering gateway;
					// 0 and 2 get there after one attempt on the other.
					if i%2 == 0 {
						if len(ops) == 0 || ops[0].Gateway != 0 || ops[0].Err == nil {
							t.Errorf("candidate %d: first %+v, want one attempt on the silent gateway", i, ops)
							continue
						}
						ops = ops[1:]
					}
					if len(ops) < 3 || ops[0].Kind != Campaign || ops[len(ops)-1].Kind != Resign {
						t.Errorf("candidate %d: %+v, want a campaign, heartbeats, a resignation", i, ops)
					}
					for _, op := range ops {
						if op.Gateway != 1 || op.Err != nil {
							t.Errorf("candidate %d: %+v, want every operation answered by gateway 1", i, op)
						}
					}
					continue
				}
				for _, op := range ops {
					if op.Gateway != 0 || op.Err == nil || op.Kind != Campaign {
						t.Errorf("candidate %d: %+v, want only failed campaigns on the silent gateway", i, op)
					}
				}
			}
			want := 4
			if !failover {
				want = 2
			}
			if sum.Resigned != want || sum.Leaders != 1 {
				t.Errorf("resigned %d, leaders %d: want %d and 1", sum.Resigned, sum.Leaders, want)
			}
		})
	}
}

func TestConfigValidateNamesTheBadField(t *testing.T) {
	ok := Config{Gateways: []string{"http://127.0.0.1:8080"}, Candidates: 1, Elections: 1, Duration: time.Second}
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"no gateway", func(c *Config) { c.Gateways = nil }},
		{"too many candidates", func(c *Config) { c.Candidates = MaxCandidates + 1 }},
		{"no elections", func(c *Config) { c.Elections = 0 }},
		{"endless", func(c *Config) { c.Duration = 0 }},
		{"too long", func(c *Config) { c.Duration = MaxDuration + time.Second }},
		{"readers without elections", func(c *Config) { c.Candidates, c.Subscribers, c.Readers = 0, 1, 1 }},
		{"bad prefix", func(c *Config) { c.Prefix = "Upper" }},
		{"not http", func(c *Config) { c.Gateways = []string{"unix:///tmp/x"} }},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for _, tt := range tests {
		c := ok
		tt.edit(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", tt.name, err)
		}
	}
}

// TestRunRemovesItsElectionsWhenAsked: with RemoveElections a run
// deletes the elections it used, steady and burst, once their candidates
// have resigned; without, they stay.
func TestRunRemovesItsElectionsWhenAsked(t *testing.T) {
	url := memoryGateway(t)
	cl := client.New(url)
	for _, keep := range []bool{false, true} {
		prefix := fmt.Sprintf("tidy-%v", keep)
		l, err := New(Config{
			Gateways: []string{url}, Candidates: 4, Elections: 2, TTL: 3 * time.Second, Connections: 2,
			Burst: 3, BurstWorkers: 1, Duration: time.Second, Prefix: prefix, RemoveElections: !keep,
		})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := l.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, n := range []string{"-0", "-1", "-b0", "-b1", "-b2"} {
			_, err := cl.Election(context.Background(), prefix+n)
			switch {
			case err == nil:
				left = append(left, prefix+n)
			case !errors.Is(err, client.ErrElectionNotFound):
				t.Fatal(err)
			}
		}
		switch {
		case !keep && (len(left) != 0 || sum.Removed != 5 || sum.Kept != ""):
			t.Errorf("after a run: elections %v left, %d removed (%q); want all 5 removed", left, sum.Removed, sum.Kept)
		case keep && (len(left) != 5 || sum.Removed != 0):
			t.Errorf("after a run without RemoveElections: elections %v left, %d removed; want all 5 kept", left, sum.Removed)
		}
	}
}
