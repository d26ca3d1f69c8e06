package main

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/electorhq/elector/api"
)

// LimitsConfig caps what clients may ask of one gateway. 0 turns a limit
// off.
type LimitsConfig struct {
	// WritesPerSecond and WriteBurst are each client's token bucket for
	// write requests (POST, PUT, PATCH, DELETE); the client is the remote
	// address, or X-Forwarded-For from http.trusted_proxies. Keys
	// limits.writes_per_second and limits.write_burst, defaults 20 and 40.
	WritesPerSecond, WriteBurst int
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
		WritesPerSecond: api.DefaultWriteRate, WriteBurst: api.DefaultWriteBurst,
		CandidatesPerElection: 1000, Elections: 10000, SSESubscribers: api.DefaultMaxStreams,
	}
}

// validate reports the first limit that cannot work.
func (l LimitsConfig) validate() error {
	for key, v := range map[string]int{
		"limits.writes_per_second": l.WritesPerSecond, "limits.write_burst": l.WriteBurst,
		"limits.candidates_per_election": l.CandidatesPerElection, "limits.elections": l.Elections,
		"limits.sse_subscribers": l.SSESubscribers,
	} {
		if v < 0 {
			return fmt.Errorf("%s is %d; use 0 for no limit", key, v)
		}
	}
	return nil
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
