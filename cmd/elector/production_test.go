package main

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestServeTLSReloadsTheCertificateOnSignalAndFileChange(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, certFile, keyFile, 1)
	base, logs, stop := startServe(t, "--backend-kind", "memory", "--tls-cert-file", certFile, "--tls-key-file", keyFile)
	addr := strings.TrimPrefix(base, "http://")

	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
	defer c.CloseIdleConnections()
	if code := call(t, c, "GET", "https://"+addr+"/readyz", "", nil, nil); code != http.StatusOK {
		t.Fatalf("readyz over TLS: %d", code)
	}
	if s := servedSerial(t, addr); s != 1 {
		t.Fatalf("serial %d, want 1", s)
	}

	// A file change is picked up by the next handshake after the poll interval.
	writeSelfSigned(t, certFile, keyFile, 2)
	future := time.Now().Add(time.Minute)
	_ = os.Chtimes(certFile, future, future)
	deadline := time.Now().Add(3 * certPollInterval)
	for servedSerial(t, addr) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the changed certificate was not served; logs:\n%s", logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestCertReloaderReloadKeepsTheOldCertificateOnError(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, certFile, keyFile, 7)
	rl, err := newCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	writeSelfSigned(t, certFile, keyFile, 8)
	if err := rl.Reload(); err != nil { // what SIGHUP does
		t.Fatal(err)
	}
	serial := func() int64 {
		c, _ := rl.GetCertificate(nil)
		x, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return x.SerialNumber.Int64()
	}
	if s := serial(); s != 8 {
		t.Fatalf("serial %d after Reload, want 8", s)
	}
	if err := os.WriteFile(keyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rl.Reload(); err == nil {
		t.Fatal("Reload of a broken key succeeded")
	}
	if s := serial(); s != 8 {
		t.Fatalf("serial %d after a failed reload, want 8", s)
	}
}

func TestHealthcheckExitCodes(t *testing.T) {
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"status":"ready"}`)
	}))
	defer ready.Close()
	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer notReady.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"ready", []string{"--url", ready.URL + "/readyz"}, 0},
		{"base URL", []string{"--url", ready.URL}, 0},
		{"base URL with a slash", []string{"--url", ready.URL + "/"}, 0},
		{"host and port", []string{"--url", strings.TrimPrefix(ready.URL, "http://")}, 0},
		{"another path", []string{"--url", ready.URL + "/healthz"}, 1},
		{"not a URL", []string{"--url", "ftp://x/readyz"}, 2},
		{"not ready", []string{"--url", notReady.URL + "/readyz"}, 1},
		{"nothing listens", []string{"--url", closed.URL + "/readyz", "--timeout", "2s"}, 1},
		{"bad flag", []string{"--nope"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if got := run(t.Context(), append([]string{"healthcheck"}, tt.args...), &out, &errb); got != tt.want {
				t.Errorf("exit %d, want %d; stderr %s", got, tt.want, errb.String())
			}
		})
	}
}

func TestDefaultProbeURLFollowsListenAndTLS(t *testing.T) {
	tests := []struct {
		listen string
		tls    bool
		want   string
	}{
		{"", false, "http://127.0.0.1:8080/readyz"},
		{"0.0.0.0:9000", false, "http://127.0.0.1:9000/readyz"},
		{":8443", true, "https://127.0.0.1:8443/readyz"},
		{"[::]:8080", false, "http://127.0.0.1:8080/readyz"},
		{"10.1.2.3:8080", true, "https://10.1.2.3:8080/readyz"},
	}
	for _, tt := range tests {
		if got := defaultProbeURL(tt.listen, tt.tls); got != tt.want {
			t.Errorf("%q tls=%v: %s, want %s", tt.listen, tt.tls, got, tt.want)
		}
	}
}

// TestSIGTERMDrainsInFlightRequestsAndHintsStreams: at shutdown a request
// whose body is still arriving completes, and an event stream receives a
// retry hint before it ends.
func TestSIGTERMDrainsInFlightRequestsAndHintsStreams(t *testing.T) {
	base, logs, stop := startServe(t, "--backend-kind", "memory", "--sse-retry", "1500ms")
	addr := strings.TrimPrefix(base, "http://")

	res, err := http.Get(base + "/v1/elections/billing/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	stream := bufio.NewReader(res.Body)
	if line, _ := stream.ReadString('\n'); !strings.HasPrefix(line, "retry:") {
		t.Fatalf("stream starts with %q", line)
	}

	// An in-flight campaign: headers and half the body sent. The server
	// answers Expect: 100-continue when the handler starts reading the
	// body, so the client knows the request is in flight.
	body := `{"id":"node-a","ttl":"30s"}`
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	connR := bufio.NewReader(conn)
	fmt.Fprintf(conn, "POST /v1/elections/billing/candidates HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n%s",
		addr, len(body), body[:10])
	if line, err := connR.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("no 100 Continue: %q, %v", line, err)
	}
	if line, err := connR.ReadString('\n'); err != nil || line != "\r\n" {
		t.Fatalf("after 100 Continue: %q, %v", line, err)
	}

	code := make(chan int, 1)
	go func() { code <- stop() }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "shutting down") {
		if time.Now().After(deadline) {
			t.Fatal("no shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}

	rest, _ := io.ReadAll(stream)
	if !strings.Contains(string(rest), "retry: 1500\n: shutting down") {
		t.Fatalf("the stream ended without the retry hint: %q", rest)
	}

	if _, err := io.WriteString(conn, body[10:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(connR, nil)
	if err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("in-flight campaign answered %d", resp.StatusCode)
	}
	if c := <-code; c != 0 {
		t.Fatalf("exit %d; logs:\n%s", c, logs)
	}
}

func TestStartupWarnsWhenListeningBeyondLoopbackWithoutTokens(t *testing.T) {
	_, logs, stop := startServe(t, "--backend-kind", "memory", "--listen", "0.0.0.0:0")
	stop()
	if !strings.Contains(logs.String(), `"level":"WARN","msg":"SECURITY: the API listens beyond loopback WITHOUT authentication`) {
		t.Fatalf("no warning:\n%s", logs)
	}
	_, logs, stop = startServe(t, "--backend-kind", "memory")
	stop()
	if strings.Contains(logs.String(), "SECURITY") {
		t.Fatalf("warning on loopback:\n%s", logs)
	}
}
