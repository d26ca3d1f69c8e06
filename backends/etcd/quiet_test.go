package etcd_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
)

// On an etcd nobody writes to, the cache's watch stays on its member and
// goes on hearing from it: etcd (3.4.24, 3.5.8 and later) answers no
// progress request of a watch that starts past its current revision, so a
// watch resumed from the revision after the last one applied would be
// given up as a silent member about every second, for as long as nobody
// writes.
func TestTheCacheWatchOfAQuietEtcdStaysOnItsMember(t *testing.T) {
	t.Parallel()
	var logs servertest.SyncBuffer
	b := newBackend(t, startCluster(t, 1), "quiet", func(c *etcd.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	eventually.True(t, 10*time.Second, "the copy following etcd", b.Following)
	first, member := b.HeardAt(), b.WatchEndpoint()
	// Progress notifications, asked for every third of MemberTimeout
	// (600ms), keep it heard from well past a MemberTimeout.
	eventually.True(t, 20*time.Second, "the watch heard from 2s after it first was", func() bool {
		return b.HeardAt() > first+2*time.Second
	})
	if strings.Contains(logs.String(), "watch moving to another member") || b.WatchEndpoint() != member {
		t.Fatalf("the watch of a quiet etcd was given up:\n%s", logs.String())
	}
}
