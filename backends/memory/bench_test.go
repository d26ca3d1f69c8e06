package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

// BenchmarkCampaignIntoAFreshElection measures a campaign into a new
// election beside 0 or 5,000 others, with Run going: the cost must not
// grow with the number of elections.
func BenchmarkCampaignIntoAFreshElection(b *testing.B) {
	for _, existing := range []int{0, 5000} {
		b.Run(fmt.Sprintf("elections=%d", existing), func(b *testing.B) {
			m := memory.New()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = m.Run(ctx) }()
			defer func() { cancel(); <-done }()
			c := gateway.Candidacy{ID: "a", TTL: time.Minute, TokenHash: "h"}
			for i := range existing {
				if _, err := m.Campaign(ctx, fmt.Sprintf("old-%d", i), c, gateway.Settings{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := m.Campaign(ctx, fmt.Sprintf("new-%d", i), c, gateway.Settings{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
