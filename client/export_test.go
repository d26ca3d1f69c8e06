package client

import "time"

// SetClock makes c read the time from now, for tests that move it.
func SetClock(c *Candidacy, now func() time.Time) { c.now = now }
