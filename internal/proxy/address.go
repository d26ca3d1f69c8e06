package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// maxAddressLen bounds a leader's address; a host name is at most 253
// bytes, and a URL's base path has no business being long.
const maxAddressLen = 512

// LeaderTarget reads where the proxy forwards to from a leader's metadata:
// the string under key, which is either host:port (forwarded over http) or
// an http or https URL with a host, optionally a port and a base path.
// Everything else is refused with an error saying what is wrong: a
// missing key, a value that is not a string, a host that is empty or
// unspecified (":8080", "0.0.0.0:8080" are listen addresses, not where
// anyone can be reached), a missing or out-of-range port in host:port,
// another scheme, user information, a query or a fragment, and any
// character a host name or IP literal cannot hold.
//
// The address comes only from the leader's own metadata as the gateway
// reports it: nothing in a proxied request chooses where it goes.
func LeaderTarget(metadata json.RawMessage, key string) (*url.URL, error) {
	var obj map[string]json.RawMessage
	if len(metadata) == 0 || string(metadata) == "null" {
		return nil, fmt.Errorf("it registered no metadata, so no %q", key)
	}
	if err := json.Unmarshal(metadata, &obj); err != nil {
		return nil, errors.New("its metadata is not a JSON object")
	}
	raw, ok := obj[key]
	if !ok {
		return nil, fmt.Errorf("its metadata has no %q", key)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || !strings.HasPrefix(strings.TrimSpace(string(raw)), `"`) {
		return nil, fmt.Errorf("its %q is %s, not a string", key, clipAddress(string(raw)))
	}
	u, err := parseTarget(s)
	if err != nil {
		return nil, fmt.Errorf("its %q %q %w", key, clipAddress(s), err)
	}
	return u, nil
}

// parseTarget parses an address as LeaderTarget takes it; errors complete
// the sentence "its "addr" "…" …".
func parseTarget(s string) (*url.URL, error) {
	if len(s) > maxAddressLen {
		return nil, fmt.Errorf("is longer than %d bytes", maxAddressLen)
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return nil, errors.New("holds a space or a control character")
		}
	}
	if !strings.Contains(s, "://") {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return nil, errors.New("is neither host:port nor an http(s) URL")
		}
		if err := checkHost(host); err != nil {
			return nil, err
		}
		if err := checkPort(port, true); err != nil {
			return nil, err
		}
		return &url.URL{Scheme: "http", Host: net.JoinHostPort(host, port)}, nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, errors.New("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("has scheme %q; want http or https", u.Scheme)
	case u.Opaque != "":
		return nil, errors.New("has no host")
	case u.User != nil:
		return nil, errors.New("carries user information; put credentials elsewhere")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return nil, errors.New("has a query or a fragment; want scheme://host[:port][/path]")
	}
	if err := checkHost(u.Hostname()); err != nil {
		return nil, err
	}
	if err := checkPort(u.Port(), false); err != nil {
		return nil, err
	}
	if strings.HasSuffix(u.Host, ":") {
		return nil, errors.New("has an empty port")
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}, nil
}

// checkHost accepts an IP literal that is not unspecified, or a host name
// of letters, digits, '-', '_' and '.'.
func checkHost(host string) error {
	if host == "" {
		return errors.New("has no host (a listen address such as :8080 says nothing about where to reach it)")
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsUnspecified() {
			return fmt.Errorf("has the unspecified host %s, a listen address; register an address others can reach", host)
		}
		return nil
	}
	if len(host) > 253 {
		return errors.New("has a host name longer than 253 bytes")
	}
	for _, r := range host {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("has host %q, which is neither an IP address nor a host name", clipAddress(host))
		}
	}
	if strings.HasPrefix(host, ".") || strings.Contains(host, "..") {
		return fmt.Errorf("has host %q, an empty label", clipAddress(host))
	}
	return nil
}

// checkPort accepts 1 to 65535 written in digits, or no port unless
// required.
func checkPort(port string, required bool) error {
	if port == "" && !required {
		return nil
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return fmt.Errorf("has port %q; want 1 to 65535", clipAddress(port))
	}
	return nil
}

// clipAddress shortens a value quoted back in an error.
func clipAddress(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}
