package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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
