package memtrim

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
)

func TestDue(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	at := time.Unix(1000, 0)
	quiet := Sample{Allocated: 500 * mib}
	tests := []struct {
		name        string
		before, now Sample
		last        time.Time
		want        bool
	}{
		{"quiet with garbage", quiet, Sample{Allocated: 500*mib + 1000, Live: 100 * mib, Objects: 180 * mib, Free: 20 * mib}, time.Time{}, true},
		{"busy with garbage", quiet, Sample{Allocated: 600 * mib, Live: 100 * mib, Objects: 180 * mib, Free: 20 * mib}, time.Time{}, false},
		{"quiet, little more than live", quiet, Sample{Allocated: 500 * mib, Live: 100 * mib, Objects: 110 * mib, Free: 10 * mib}, time.Time{}, false},
		{"quiet, small heap within the slack", quiet, Sample{Allocated: 500 * mib, Live: 10 * mib, Objects: 30 * mib, Free: 10 * mib}, time.Time{}, false},
		{"quiet with garbage, trimmed a moment ago", quiet, Sample{Allocated: 500 * mib, Live: 100 * mib, Objects: 200 * mib}, at.Add(-10 * time.Second), false},
		{"quiet with garbage, trimmed long ago", quiet, Sample{Allocated: 500 * mib, Live: 100 * mib, Objects: 200 * mib}, at.Add(-time.Minute), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := (Config{}).Due(tt.before, tt.now, at, tt.last); got != tt.want {
				t.Fatalf("Due = %v, want %v", got, tt.want)
			}
		})
	}
}

var sink [][]byte

// A process that made much garbage and then goes quiet is trimmed once:
// its heap objects and retained free pages come down to about what it
// holds.
func TestRunTrimsAQuietProcess(t *testing.T) {
	live := make([][]byte, 0, 64)
	for range 64 {
		live = append(live, make([]byte, 1<<20)) // 64 MiB held
	}
	runtime.GC()
	// No collection while the garbage is made, so that all of it is still
	// there when Run looks: 256 MiB, well past the slack.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for range 256 {
		sink = append(sink[:0], make([]byte, 1<<20))
	}
	sink = nil
	if s := read(); s.Objects+s.Free <= s.Live+max(DefaultSlack, s.Live/4) {
		t.Fatalf("no garbage to trim: %d MiB of objects and %d MiB free, %d MiB live", s.Objects>>20, s.Free>>20, s.Live>>20)
	}

	var trims atomic.Int64
	trimmed := make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Config{Interval: 20 * time.Millisecond, Every: time.Hour}, func() {
			trims.Add(1)
			trimmed <- struct{}{}
		})
	}()
	select {
	case <-trimmed:
	case <-ctx.Done():
		t.Fatal("no trim of a quiet process holding 256 MiB of garbage")
	}
	s := read()
	cancel()
	<-done
	if n := trims.Load(); n != 1 {
		t.Fatalf("%d trims, want 1 (and no more within Every)", n)
	}
	if s.Objects+s.Free > s.Live+max(DefaultSlack, s.Live/4) {
		t.Fatalf("after the trim the heap holds %d MiB of objects and %d MiB free, %d MiB live", s.Objects>>20, s.Free>>20, s.Live>>20)
	}
	runtime.KeepAlive(live)
}

// Run returns when its context ends.
func TestRunEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Config{Interval: time.Millisecond}, nil)
	}()
	cancel()
	<-done
}

func TestPercent(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := []struct {
		name  string
		floor uint64
		live  uint64
		want  int
	}{
		{"no floor", 0, 10 * mib, 100},
		{"before the first collection", 256 * mib, 0, 100},
		{"a small heap grows to the floor", 256 * mib, 64 * mib, 300},
		{"a heap at half the floor", 256 * mib, 128 * mib, 100},
		{"a heap past the floor", 256 * mib, 300 * mib, 100},
		{"a tiny heap, capped", 256 * mib, 1 * mib, MaxPercent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := (Config{Floor: tt.floor}).Percent(100, tt.live); got != tt.want {
				t.Fatalf("Percent(100, %d MiB) = %d, want %d", tt.live>>20, got, tt.want)
			}
		})
	}
}

// gogc reads the GOGC the runtime runs with.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// With a floor far above the heap, Run raises GOGC, and puts it back when
// it ends.
func TestRunRaisesGOGCForASmallHeap(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set in the environment: Run leaves it alone")
	}
	runtime.GC() // a live heap to count from
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Config{Interval: 10 * time.Millisecond, Floor: 1 << 40}, nil)
	}()
	eventually.NoError(t, 10*time.Second, "GOGC raised", func() error {
		if p := gogc(); p != MaxPercent {
			return fmt.Errorf("GOGC %d, want %d", p, MaxPercent)
		}
		return nil
	})
	cancel()
	<-done
	if p := gogc(); p != 100 {
		t.Fatalf("GOGC %d after Run ended, want 100 again", p)
	}
}

func TestFloorUnder(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := []struct {
		name        string
		want, limit uint64
		floor       uint64
	}{
		{"no limit", 256 * mib, 0, 256 * mib},
		{"a roomy limit", 256 * mib, 4096 * mib, 256 * mib},
		{"a container of 256 MiB", 256 * mib, 256 * mib, 64 * mib},
		{"a container of 64 MiB", 256 * mib, 64 * mib, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := FloorUnder(tt.want, tt.limit); got != tt.floor {
				t.Fatalf("FloorUnder(%d MiB, %d MiB) = %d MiB, want %d MiB", tt.want>>20, tt.limit>>20, got>>20, tt.floor>>20)
			}
		})
	}
}
