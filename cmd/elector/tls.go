package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// TLSConfig turns on TLS for the HTTP API.
type TLSConfig struct {
	// CertFile and KeyFile are the PEM certificate (chain) and key. Both or
	// neither. Keys tls.cert_file and tls.key_file, default none (plain
	// HTTP). They are reloaded on SIGHUP and when their files change.
	CertFile, KeyFile string
	// ClientCAFile is a PEM bundle trusted to sign client certificates.
	// Key tls.client_ca_file, default none.
	ClientCAFile string
	// ClientAuth is none, request (verify a certificate if one is given)
	// or require. Key tls.client_auth, default none.
	ClientAuth string
}

// Enabled reports whether the API serves TLS.
func (c TLSConfig) Enabled() bool { return c.CertFile != "" }

// certPollInterval is how often a handshake may look at the certificate
// files' modification times.
const certPollInterval = 2 * time.Second

// certReloader serves the certificate of a cert and key file pair to TLS
// handshakes and reloads it when the files change (seen by modification
// time, checked at most every certPollInterval during a handshake) or
// when Reload is called (SIGHUP). A reload that fails keeps the old
// certificate and logs why. It needs no goroutine of its own.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu        sync.Mutex
	cert      *tls.Certificate
	certMod   time.Time
	keyMod    time.Time
	lastCheck time.Time
}

// newCertReloader loads the pair once; the error is the loading error.
func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// load reads the pair; the caller holds mu or owns r exclusively.
func (r *certReloader) load() error {
	cm, km := modTime(r.certFile), modTime(r.keyFile)
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls: load %s and %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.certMod, r.keyMod = &c, cm, km
	return nil
}

// Reload reads the files again now.
func (r *certReloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloadLocked("signal")
}

func (r *certReloader) reloadLocked(why string) error {
	if err := r.load(); err != nil {
		r.log.LogAttrs(context.Background(), slog.LevelError, "TLS certificate reload failed; keeping the old one",
			slog.String("trigger", why), slog.Any("err", err))
		return err
	}
	r.log.LogAttrs(context.Background(), slog.LevelInfo, "TLS certificate reloaded", slog.String("trigger", why), slog.String("cert_file", r.certFile))
	return nil
}

// GetCertificate is tls.Config.GetCertificate.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.lastCheck) >= certPollInterval {
		r.lastCheck = now
		if !modTime(r.certFile).Equal(r.certMod) || !modTime(r.keyFile).Equal(r.keyMod) {
			_ = r.reloadLocked("file change")
		}
	}
	return r.cert, nil
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// serverTLS returns the tls.Config of the HTTP server and the reloader of
// its certificate.
func (c TLSConfig) serverTLS(log *slog.Logger) (*tls.Config, *certReloader, error) {
	rl, err := newCertReloader(c.CertFile, c.KeyFile, log)
	if err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: rl.GetCertificate, NextProtos: []string{"h2", "http/1.1"}}
	if c.ClientCAFile != "" {
		pem, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("tls: client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("tls: client CA %s holds no PEM certificate", c.ClientCAFile)
		}
		cfg.ClientCAs = pool
	}
	switch c.ClientAuth {
	case "request":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "require":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, rl, nil
}

// validate checks the TLS settings without loading anything, naming the
// key at fault; source tells where a key's value came from.
func (c TLSConfig) validate(source func(string) string) error {
	bad := func(key, format string, args ...any) error {
		return configError(key, source(key), format, args...)
	}
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		if c.CertFile == "" { // name the key that was given
			return bad("tls.key_file", "needs tls.cert_file")
		}
		return bad("tls.cert_file", "needs tls.key_file")
	case c.ClientAuth != "none" && c.ClientAuth != "request" && c.ClientAuth != "require":
		return bad("tls.client_auth", "%q is not one of none, request, require", c.ClientAuth)
	case c.ClientAuth != "none" && c.ClientCAFile == "":
		return bad("tls.client_auth", "%s needs tls.client_ca_file", c.ClientAuth)
	case c.ClientAuth != "none" && !c.Enabled():
		return bad("tls.client_auth", "%s needs tls.cert_file and tls.key_file", c.ClientAuth)
	}
	return nil
}

// listenTLS wraps ln in TLS when c is enabled and returns the reloader of
// the certificate (nil without TLS).
func listenTLS(ln net.Listener, c TLSConfig, log *slog.Logger) (net.Listener, *certReloader, error) {
	if !c.Enabled() {
		return ln, nil, nil
	}
	cfg, rl, err := c.serverTLS(log)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	return tls.NewListener(ln, cfg), rl, nil
}

// catchHangup starts taking SIGHUP for the process; the caller passes the
// channel to reloadOnHangup and calls the returned stop when done. Without
// TLS the signal is taken all the same: it would otherwise kill the gateway,
// and operators send it by habit to ask for a reload.
func catchHangup() (<-chan os.Signal, func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup, func() { signal.Stop(hup) }
}

// reloadOnHangup reloads rl's certificate (if any) on every signal from
// hup until ctx ends; without one it logs that there is nothing to reload.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, rl *certReloader, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if rl != nil {
				_ = rl.Reload()
			} else {
				log.LogAttrs(ctx, slog.LevelInfo, "SIGHUP: no TLS certificate to reload")
			}
		}
	}
}
