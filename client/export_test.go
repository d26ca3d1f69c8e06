package client

import "time"

// SetClock makes c read the time from now, for tests that move it.
func SetClock(c *Candidacy, now func() time.Time) { c.now = now }

// OnHeartbeatAnswer makes c call f after each heartbeat's answer came,
// before it acts on it.
func OnHeartbeatAnswer(c *Candidacy, f func()) { c.onAnswer = f }
