package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/server"
)

// writeSelfSigned writes a fresh self-signed certificate for 127.0.0.1
// with serial to certFile and keyFile.
func writeSelfSigned(t *testing.T, certFile, keyFile string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "elector-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// servedSerial connects to addr and returns the serial of its certificate.
func servedSerial(t *testing.T, addr string) int64 {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test reads the certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// startTLS starts a gateway serving the certificate with serial, and
// returns it and the certificate's files.
func startTLS(t *testing.T, serial int64) (gw *servertest.Gateway, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, certFile, keyFile, serial)
	gw = servertest.Start(t, servertest.Configure(func(c *server.Config) {
		c.TLS.CertFile, c.TLS.KeyFile = certFile, keyFile
	}))
	return gw, certFile, keyFile
}

func TestTLSReloadsTheCertificateWhenItsFilesChange(t *testing.T) {
	gw, certFile, keyFile := startTLS(t, 1)
	addr := gw.Server.Addr().String()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
	defer c.CloseIdleConnections()
	res, err := c.Get(gw.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(gw.URL, "https://") {
		t.Fatalf("readyz over TLS at %s: %d", gw.URL, res.StatusCode)
	}
	if s := servedSerial(t, addr); s != 1 {
		t.Fatalf("serial %d, want 1", s)
	}

	// A file change is picked up by the first handshake after the poll
	// interval (2s).
	writeSelfSigned(t, certFile, keyFile, 2)
	future := time.Now().Add(time.Minute)
	_ = os.Chtimes(certFile, future, future)
	deadline := time.Now().Add(30 * time.Second)
	for servedSerial(t, addr) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the changed certificate was not served")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestReloadTLSKeepsTheOldCertificateOnError(t *testing.T) {
	gw, certFile, keyFile := startTLS(t, 7)
	addr := gw.Server.Addr().String()
	writeSelfSigned(t, certFile, keyFile, 8)
	if err := gw.Server.ReloadTLS(); err != nil { // what SIGHUP does
		t.Fatal(err)
	}
	if s := servedSerial(t, addr); s != 8 {
		t.Fatalf("serial %d after ReloadTLS, want 8", s)
	}
	if err := os.WriteFile(keyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := gw.Server.ReloadTLS(); err == nil {
		t.Fatal("ReloadTLS of a broken key succeeded")
	}
	if s := servedSerial(t, addr); s != 8 {
		t.Fatalf("serial %d after a failed reload, want 8", s)
	}
}

func TestNewRefusesACertificateItCannotLoad(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.TLS.CertFile, cfg.TLS.KeyFile = filepath.Join(t.TempDir(), "missing.crt"), filepath.Join(t.TempDir(), "missing.key")
	if _, err := server.New(cfg); !errors.Is(err, server.ErrConfig) || !strings.Contains(err.Error(), "missing.crt") {
		t.Fatalf("New: %v; want a configuration error naming the file", err)
	}
}
