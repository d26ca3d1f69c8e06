package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// ErrDestinationRefused is returned for an endpoint URL, or a dialled
// address, that the SSRF guard refuses: not http or https, or an address on
// a loopback, private, link-local (cloud metadata included), CGNAT,
// multicast, reserved or unspecified network, or scoped by an IPv6 zone,
// while private networks are not allowed.
var ErrDestinationRefused = errors.New("webhooks: destination refused")

// RefusedError is an ErrDestinationRefused with what is refused, for
// callers that tell a client why (package api does).
type RefusedError struct {
	// Reason says what is refused: `10.0.0.1 is a private address`, or
	// for the scheme `scheme "ftp"; only http and https are delivered to`.
	Reason string
	// Scheme is set when the URL's scheme is refused, not its destination.
	Scheme bool
	// advice ends the error's text: what an operator may change.
	advice string
}

func (e *RefusedError) Error() string {
	msg := ErrDestinationRefused.Error() + ": " + e.Reason
	if e.advice != "" {
		msg += "; " + e.advice
	}
	return msg
}

// Unwrap returns ErrDestinationRefused.
func (e *RefusedError) Unwrap() error { return ErrDestinationRefused }

// Advice that ends a RefusedError.
const (
	allowPrivateAdvice = "set webhooks.allow_private_networks to allow it"
	usePublicAdvice    = "use a public name or address"
)

// refusedPrefixes are the networks a webhook may not reach unless
// Config.AllowPrivateNetworks is set, and why.
var refusedPrefixes = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"}, // RFC 8215: reaches the site's IPv4, private ranges included
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (private)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// refusal says why ip may not be dialled, or "" if it may. An address
// with a zone (fe80::1%eth0, ::1%lo) is refused whatever it is: a zone
// names a local interface, which no public destination needs, and
// netip.Prefix.Contains is false for every zoned address, so checking
// the prefixes alone would let ::1%lo through. A 6to4 address is
// judged by the IPv4 address it embeds.
func refusal(ip netip.Addr) string {
	if z := ip.Zone(); z != "" {
		return fmt.Sprintf("scoped (zone %q)", clip(z))
	}
	ip = ip.Unmap()
	for _, r := range refusedPrefixes {
		if r.p.Contains(ip) {
			return r.why
		}
	}
	if sixToFour.Contains(ip) {
		b := ip.As16()
		if why := refusal(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})); why != "" {
			return "6to4 " + why
		}
	}
	return ""
}

// sixToFour is the 6to4 prefix (RFC 3056): 2002:AABB:CCDD::/48 reaches
// the IPv4 address AA.BB.CC.DD through a relay.
var sixToFour = netip.MustParsePrefix("2002::/16")

// dialControl is the net.Dialer Control of the webhook client: it checks
// the address actually dialled, after DNS resolution, so that a name that
// resolves to a private address (DNS rebinding included) is refused.
func dialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Reason: fmt.Sprintf("cannot parse dialled address %q", address)}
	}
	if why := refusal(ap.Addr()); why != "" {
		return &RefusedError{Reason: fmt.Sprintf("%s is a %s address", ap.Addr(), why), advice: allowPrivateAdvice}
	}
	return nil
}

// Resolver resolves host names for CheckURL; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckURL checks an endpoint URL when it is registered: an absolute http
// or https URL with a host and without user info, and, unless allowPrivate,
// a host that is not, and does not resolve to, an address the guard
// refuses. A host that does not resolve yet is accepted: the dialler checks
// again on every delivery. Errors: ErrDestinationRefused, ErrInvalidURL.
func CheckURL(ctx context.Context, raw string, allowPrivate bool, r Resolver) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%w: %q is not an absolute URL such as https://example.com/hooks/elector", ErrInvalidURL, clip(raw))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &RefusedError{Reason: fmt.Sprintf("scheme %q; only http and https are delivered to", u.Scheme), Scheme: true}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: port %s is not a port from 1 to 65535", ErrInvalidURL, clip(p))
		}
	}
	if u.User != nil {
		return fmt.Errorf("%w: the URL has user info; put credentials in the path or verify the signature instead", ErrInvalidURL)
	}
	if len(raw) > MaxURLBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidURL, MaxURLBytes)
	}
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	if strings.Contains(host, "%") {
		// A zone (http://[::1%25lo]/) or a percent-escaped name: neither is
		// a public destination, and a zone would hide the address from the
		// prefix checks.
		return &RefusedError{Reason: fmt.Sprintf("host %q has a zone or a percent sign", clip(host)), advice: usePublicAdvice}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := refusal(ip); why != "" {
			return &RefusedError{Reason: fmt.Sprintf("%s is a %s address", ip, why), advice: allowPrivateAdvice}
		}
		return nil
	}
	if name := strings.ToLower(strings.TrimSuffix(host, ".")); name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return &RefusedError{Reason: host + " is loopback", advice: allowPrivateAdvice}
	}
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil // not resolvable now; checked again when dialled
	}
	for _, ip := range addrs {
		if why := refusal(ip); why != "" {
			return &RefusedError{Reason: fmt.Sprintf("%s resolves to %s, a %s address", host, ip, why), advice: allowPrivateAdvice}
		}
	}
	return nil
}

// clip shortens a value quoted back in an error.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
