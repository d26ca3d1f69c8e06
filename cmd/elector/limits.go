package main

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/electorhq/elector/api"
)

// LimitsConfig caps what clients may ask of one gateway. 0 turns a limit
// off.
type LimitsConfig struct {
	// WritesPerSecond and WriteBurst are each client's token bucket for
	// write requests (POST, PUT, PATCH, DELETE) other than heartbeats; the
	// client is the remote address, or X-Forwarded-For from
	// http.trusted_proxies. Keys limits.writes_per_second and
	// limits.write_burst, default 0 (off): behind a load balancer every
	// candidate shares one address.
	WritesPerSecond, WriteBurst int
	// HeartbeatsPerSecond and HeartbeatBurst are each candidate's token
	// bucket for heartbeats, whatever its address. The rate used is at
	// least 6/elections.min_ttl, twice what a candidate heartbeating at
	// TTL/3 sends. Keys limits.heartbeats_per_second and
	// limits.heartbeat_burst, defaults 10 and 20.
	HeartbeatsPerSecond, HeartbeatBurst int
	// ReadsPerSecond and ReadBurst are each client's token bucket for
	// reads (GET of /v1/ but event streams). Keys limits.reads_per_second
	// and limits.read_burst, default 0 (off).
	ReadsPerSecond, ReadBurst int
	// ConcurrentReads caps the reads served at once on this replica. Key
	// limits.concurrent_reads, default 1024.
	ConcurrentReads int
	// CandidatesPerElection caps the candidates of one election. Key
	// limits.candidates_per_election, default 1000.
	CandidatesPerElection int
	// Elections caps the number of elections. Key limits.elections,
	// default 10000. Both caps are best-effort across replicas: concurrent
	// campaigns can overshoot them by their number; leadership is never
	// affected.
	Elections int
	// SSESubscribers caps the event streams open at once on this replica.
	// Key limits.sse_subscribers, default 10000.
	SSESubscribers int
}

// DefaultLimits are the limits used where nothing else is set.
func DefaultLimits() LimitsConfig {
	return LimitsConfig{
		HeartbeatsPerSecond: api.DefaultHeartbeatRate, HeartbeatBurst: api.DefaultHeartbeatBurst,
		ConcurrentReads:       api.DefaultMaxReads,
		CandidatesPerElection: 1000, Elections: 10000, SSESubscribers: api.DefaultMaxStreams,
	}
}

// validate reports the first limit that cannot work, in the order of the
// configuration file.
func (l LimitsConfig) validate() error {
	for _, f := range []struct {
		key string
		v   int
	}{
		{"limits.writes_per_second", l.WritesPerSecond}, {"limits.write_burst", l.WriteBurst},
		{"limits.heartbeats_per_second", l.HeartbeatsPerSecond}, {"limits.heartbeat_burst", l.HeartbeatBurst},
		{"limits.reads_per_second", l.ReadsPerSecond}, {"limits.read_burst", l.ReadBurst},
		{"limits.concurrent_reads", l.ConcurrentReads},
		{"limits.candidates_per_election", l.CandidatesPerElection}, {"limits.elections", l.Elections},
		{"limits.sse_subscribers", l.SSESubscribers},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s is %d; use 0 for no limit", f.key, f.v)
		}
	}
	return nil
}

// heartbeatRate is the per-candidate heartbeat rate to apply: the
// configured one, raised to twice what a candidate of the shortest TTL
// sends at TTL/3, so that no well-behaved candidate is ever refused; 0
// stays off.
func (l LimitsConfig) heartbeatRate(minTTL time.Duration) float64 {
	if l.HeartbeatsPerSecond <= 0 {
		return 0
	}
	return max(float64(l.HeartbeatsPerSecond), 6/minTTL.Seconds())
}

// parseTrustedProxies parses http.trusted_proxies: addresses or CIDR
// prefixes.
func parseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("http.trusted_proxies: %q is not an address or CIDR prefix", s)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("http.trusted_proxies: %q is not an address or CIDR prefix", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
