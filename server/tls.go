package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/electorhq/elector/internal/fielderr"
)

// TLSConfig turns on TLS for the HTTP API.
type TLSConfig struct {
	// CertFile and KeyFile are the PEM certificate (chain) and key. Both or
	// neither. Default none (plain HTTP). They are reloaded when their
	// files change and on Server.ReloadTLS.
	CertFile, KeyFile string
	// ClientCAFile is a PEM bundle trusted to sign client certificates.
	// Default none.
	ClientCAFile string
	// ClientAuth is none, request (verify a certificate if one is given)
	// or require. DefaultConfig: none.
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
// when Reload is called (Server.ReloadTLS). A reload that fails keeps the old
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

// Validate checks c without loading anything and reports the first
// value that cannot work, as a *fielderr.Error.
func (c TLSConfig) Validate() error {
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		if c.CertFile == "" { // name the field that was given
			return fielderr.Errorf("KeyFile", "needs {CertFile}")
		}
		return fielderr.Errorf("CertFile", "needs {KeyFile}")
	case c.ClientAuth != "none" && c.ClientAuth != "request" && c.ClientAuth != "require":
		return fielderr.Errorf("ClientAuth", "%q is not one of none, request, require", c.ClientAuth)
	case c.ClientAuth != "none" && c.ClientCAFile == "":
		return fielderr.Errorf("ClientAuth", "%s needs {ClientCAFile}", c.ClientAuth)
	case c.ClientAuth != "none" && !c.Enabled():
		return fielderr.Errorf("ClientAuth", "%s needs {CertFile} and {KeyFile}", c.ClientAuth)
	}
	return nil
}

// loadTLS loads what c configures: the tls.Config of the HTTP server and
// the reloader of its certificate, both nil without TLS. Errors wrap
// ErrConfig.
func loadTLS(c TLSConfig, log *slog.Logger) (*tls.Config, *certReloader, error) {
	if !c.Enabled() {
		return nil, nil, nil
	}
	cfg, rl, err := c.serverTLS(log)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return cfg, rl, nil
}
