package etcd_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
)

// certs writes a CA and, signed by it, a server certificate for 127.0.0.1
// and a client certificate, as PEM files in dir.
func certs(t *testing.T, dir string) (ca, serverCert, serverKey, clientCert, clientKey string) {
	t.Helper()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "elector test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(key)
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	ca = write("ca.pem", "CERTIFICATE", caDER)
	serverCert, serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	clientCert, clientKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return
}

// TestTLSWithClientCertificate runs elector against a member that serves
// only TLS and requires a client certificate.
func TestTLSWithClientCertificate(t *testing.T) {
	t.Parallel()
	ca, sc, sk, cc, ck := certs(t, t.TempDir())
	m := &member{name: "tls0", dir: t.TempDir(), client: freeURL(t), peer: freeURL(t), state: embed.ClusterStateFlagNew,
		tls: &transport.TLSInfo{CertFile: sc, KeyFile: sk, TrustedCAFile: ca, ClientCertAuth: true}}
	m.client.Scheme = "https"
	m.cluster = m.name + "=" + m.peer.String()
	if err := m.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.stop)
	ms := []*member{m}

	b := newBackend(t, ms, "elector", func(c *etcd.Config) { c.CAFile, c.CertFile, c.KeyFile = ca, cc, ck })
	ctx := context.Background()
	th := gateway.HashToken(gateway.NewToken())
	st, err := b.Campaign(ctx, "tls", gateway.Candidacy{ID: "a", TTL: 5 * time.Second, TokenHash: th}, gateway.DefaultSettings())
	if err != nil || st.Candidate.State != gateway.StateLeader {
		t.Fatalf("campaign over TLS: %+v, %v", st, err)
	}
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("ping over TLS: %v", err)
	}

	// Without the client certificate the member refuses the connection.
	anon := newBackend(t, ms, "elector", func(c *etcd.Config) { c.CAFile, c.RequestTimeout = ca, time.Second })
	if err := anon.Ping(ctx); err == nil {
		t.Fatal("ping over TLS without a client certificate succeeded")
	}
}
