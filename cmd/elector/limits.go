package main

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// heartbeatRate is the per-candidate heartbeat rate to apply: perSecond
// (limits.heartbeats_per_second), raised to twice what a candidate of the
// shortest TTL sends at TTL/3, so that no well-behaved candidate is ever
// refused; 0 stays off.
func heartbeatRate(perSecond float64, minTTL time.Duration) float64 {
	if perSecond <= 0 {
		return 0
	}
	return max(perSecond, 6/minTTL.Seconds())
}

// parseTrustedProxies parses http.trusted_proxies: addresses or CIDR
// prefixes.
func parseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%q is not an address or CIDR prefix", s)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or CIDR prefix", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
