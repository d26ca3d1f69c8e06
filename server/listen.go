package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
)

// listen listens on c.Listen, in TLS when tlsCfg is not nil, and warns
// when the API is open to the network without tokens.
func listen(ctx context.Context, c Config, tlsCfg *tls.Config, log *slog.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", c.Listen, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	warnIfOpen(ctx, log, c, ln.Addr())
	return ln, nil
}

// warnIfOpen logs a loud warning when the API listens beyond loopback
// without API tokens: anybody who can reach it can resign leaders'
// rivals, change settings and add webhooks.
func warnIfOpen(ctx context.Context, log *slog.Logger, c Config, addr net.Addr) {
	if len(c.API.Tokens) > 0 {
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

// baseURL is where a browser on this host reaches the gateway listening
// on addr: loopback for a wildcard address.
func baseURL(addr net.Addr, tlsOn bool) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// MaxHeaderBytes bounds the request line and headers the API's server
// reads from one request.
const MaxHeaderBytes = 64 << 10

// server is the HTTP server of the API, serving handler.
func (h HTTPConfig) server(handler http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cmp.Or(h.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		WriteTimeout:      h.WriteTimeout,
		IdleTimeout:       h.IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
