package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/electorhq/elector/server"
)

// runHealthcheck is `elector healthcheck`: it asks a gateway's /readyz and
// exits 0 when it answers 2xx, 1 otherwise, for container images without
// a shell (Docker HEALTHCHECK). Without --url it derives the address from
// the environment serve reads: ELECTOR_LISTEN, and https when
// ELECTOR_TLS_CERT_FILE is set.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f healthcheckFlags
	fs := newHealthcheckFlags(stderr, &f)
	url, timeout, insecure := &f.url, &f.timeout, &f.insecure
	if err := fs.Parse(args); err != nil {
		return usageExit(stderr, "healthcheck", err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "elector healthcheck: unexpected argument %q; did you mean --url %s?\n", fs.Arg(0), fs.Arg(0))
		return 2
	}
	if *url == "" {
		*url = defaultProbeURL(os.Getenv(setting{key: "listen"}.env()), os.Getenv(setting{key: "tls.cert_file"}.env()) != "")
		*insecure = true // our own address: its certificate names the public host
	} else {
		u, err := probeURL(*url)
		if err != nil {
			fmt.Fprintf(stderr, "elector healthcheck: %v\n", err)
			return 2
		}
		*url = u
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "elector healthcheck: %v\n", err)
		return 2
	}
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: *insecure}} //nolint:gosec // loopback probe or asked for
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "elector healthcheck: %s: %v\n", *url, err)
		return 1
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		fmt.Fprintf(stderr, "elector healthcheck: %s: %s %s\n", *url, res.Status, body)
		return 1
	}
	fmt.Fprintf(stdout, "%s", body)
	return 0
}

// healthcheckFlags are the flags of `elector healthcheck`.
type healthcheckFlags struct {
	url      string
	timeout  time.Duration
	insecure bool
}

func newHealthcheckFlags(stderr io.Writer, f *healthcheckFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("healthcheck", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: elector healthcheck [--url URL] [--timeout 5s] [--insecure]

Asks a gateway's /readyz and exits 0 when it answers 2xx, 1 otherwise (the
container image's HEALTHCHECK, for images without a shell). Without --url
it asks the address serve listens on ($ELECTOR_LISTEN, https when
$ELECTOR_TLS_CERT_FILE is set).

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.url, "url", "", "the gateway's base URL, whose /readyz is asked, or a full URL to probe (default: /readyz at $ELECTOR_LISTEN, https if $ELECTOR_TLS_CERT_FILE is set)")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "time allowed for the answer")
	fs.BoolVar(&f.insecure, "insecure", false, "do not verify the server's certificate (implied for the derived loopback URL)")
	return fs
}

// probeURL is the URL healthcheck asks for --url u: u itself when it
// names a path, else /readyz under it, so that the base URL other commands
// take as --gateway works too; http:// is assumed without a scheme.
func probeURL(u string) (string, error) {
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	p, err := neturl.Parse(u)
	if err != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https") {
		return "", fmt.Errorf("--url %q is not an http(s) URL such as http://127.0.0.1:8080", u)
	}
	if p.Path == "" || p.Path == "/" {
		p.Path = "/readyz"
	}
	return p.String(), nil
}

// defaultProbeURL is /readyz at the listen address, with a wildcard host
// replaced by loopback.
func defaultProbeURL(listen string, tlsOn bool) string {
	if listen == "" {
		listen = server.DefaultListen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		host, port = "127.0.0.1", "8080"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/readyz"
}
