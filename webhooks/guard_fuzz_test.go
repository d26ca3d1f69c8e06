package webhooks

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// localByStdlib is an oracle independent of the guard's prefix table: the
// standard library's own classification of host (a zone, if any, cut
// off), and whether host had a zone. ok is false when host is not an IP
// literal.
func localByStdlib(host string) (local, zoned, ok bool) {
	addr, zone, zoned := strings.Cut(host, "%")
	ip := net.ParseIP(addr)
	if ip == nil {
		return false, zoned && zone != "", false
	}
	local = ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast()
	return local, zoned, true
}

// FuzzDialControl feeds the dial-time guard arbitrary dialled addresses:
// whatever it lets through must be a parseable address without a zone that
// the standard library does not call loopback, private, link-local,
// multicast or unspecified. The seeds are in testdata/fuzz/FuzzDialControl.
func FuzzDialControl(f *testing.F) {
	f.Fuzz(func(t *testing.T, address string) {
		if dialControl("tcp", address, nil) != nil {
			return
		}
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			t.Fatalf("%q: allowed, but it is not host:port: %v", address, err)
		}
		local, zoned, ok := localByStdlib(host)
		switch {
		case zoned:
			t.Fatalf("%q: allowed an address with a zone", address)
		case !ok:
			t.Fatalf("%q: allowed a host that is not an IP address", address)
		case local:
			t.Fatalf("%q: allowed a local address", address)
		}
	})
}

// failingResolver resolves nothing, so that CheckURL judges literals only
// (a name that does not resolve is checked again when dialled).
type failingResolver struct{ fakeResolver }

// FuzzCheckURL feeds the registration-time check arbitrary URLs: whatever
// it accepts with private networks refused is an http(s) URL whose port,
// if any, is 1-65535 and whose host is neither zoned nor a literal the
// standard library calls local. The seeds are in testdata/fuzz/FuzzCheckURL.
func FuzzCheckURL(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw string) {
		if CheckURL(context.Background(), raw, false, failingResolver{}) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%q: accepted, but it does not parse: %v", raw, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("%q: accepted scheme %q", raw, u.Scheme)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				t.Fatalf("%q: accepted port %q", raw, p)
			}
		}
		host := u.Hostname()
		if strings.Contains(host, "%") {
			t.Fatalf("%q: accepted host %q with a zone", raw, host)
		}
		if local, _, ok := localByStdlib(host); ok && local {
			t.Fatalf("%q: accepted the local address %s", raw, host)
		}
	})
}
