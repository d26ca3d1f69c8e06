package main

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
)

// validateProduction checks the auth, TLS and proxy settings,
// naming the key at fault. It reads token files and variables to do so.
func (c Config) validateProduction(source func(string) string) error {
	if _, err := c.Auth.apiTokens(); err != nil {
		return configError("auth.tokens", source("auth.tokens"), "%v", err)
	}
	if err := c.TLS.validate(source); err != nil {
		return err
	}
	if _, err := parseTrustedProxies(c.HTTP.TrustedProxies); err != nil {
		return configError("http.trusted_proxies", source("http.trusted_proxies"), "%v", err)
	}
	return nil
}

// warnIfOpen logs a loud warning when the API listens beyond loopback
// without API tokens: anybody who can reach it can resign leaders'
// rivals, change settings and add webhooks.
func warnIfOpen(ctx context.Context, log *slog.Logger, c Config, addr net.Addr) {
	if len(c.Auth.Tokens) > 0 {
		return
	}
	if ta, ok := addr.(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(ta.IP); ok && a.Unmap().IsLoopback() {
			return
		}
	}
	log.LogAttrs(ctx, slog.LevelWarn, "SECURITY: the API listens beyond loopback WITHOUT authentication: anybody who can reach "+
		"it can campaign, resign and reconfigure elections and add webhooks; configure auth.tokens (see configs/auth.yaml) "+
		"or listen on 127.0.0.1", slog.String("listen", addr.String()))
}
