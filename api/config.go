package api

import (
	"fmt"
	"time"

	"github.com/electorhq/elector/internal/fielderr"
)

// Bounds Config.Validate applies.
const (
	MinBodyBytes   = 1024
	MinBodyTimeout = time.Millisecond
	MinKeepAlive   = time.Second
	MinRetryHint   = 100 * time.Millisecond
)

// Validate reports the first field of c that cannot work, as a
// *fielderr.Error. A zero body cap, timeout, keep-alive or retry hint takes
// its default; a zero rate, burst or cap is off (a zero burst follows its
// rate); negative values are refused.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("api: %w", fielderr.Errorf(field, format, args...))
	}
	for _, f := range []struct {
		field    string
		value    any
		negative bool
	}{
		{"MaxBodyBytes", c.MaxBodyBytes, c.MaxBodyBytes < 0}, {"BodyTimeout", c.BodyTimeout, c.BodyTimeout < 0},
		{"KeepAlive", c.KeepAlive, c.KeepAlive < 0}, {"RetryHint", c.RetryHint, c.RetryHint < 0},
		{"WriteRate", c.WriteRate, c.WriteRate < 0}, {"WriteBurst", c.WriteBurst, c.WriteBurst < 0},
		{"HeartbeatRate", c.HeartbeatRate, c.HeartbeatRate < 0}, {"HeartbeatBurst", c.HeartbeatBurst, c.HeartbeatBurst < 0},
		{"ReadRate", c.ReadRate, c.ReadRate < 0}, {"ReadBurst", c.ReadBurst, c.ReadBurst < 0},
		{"MaxReads", c.MaxReads, c.MaxReads < 0}, {"MaxStreams", c.MaxStreams, c.MaxStreams < 0},
	} {
		if f.negative {
			return bad(f.field, "%v is negative; 0 takes the default or turns a limit off", f.value)
		}
	}
	c = c.withDefaults()
	switch {
	case c.MaxBodyBytes < MinBodyBytes:
		return bad("MaxBodyBytes", "%d is below the minimum %d", c.MaxBodyBytes, MinBodyBytes)
	case c.BodyTimeout < MinBodyTimeout:
		return bad("BodyTimeout", "%s is below the minimum %s", c.BodyTimeout, MinBodyTimeout)
	case c.KeepAlive < MinKeepAlive:
		return bad("KeepAlive", "%s is below the minimum %s", c.KeepAlive, MinKeepAlive)
	case c.RetryHint < MinRetryHint:
		return bad("RetryHint", "%s is below the minimum %s", c.RetryHint, MinRetryHint)
	}
	return nil
}
