package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/electorhq/elector/client"
)

// Environment variables of the sidecar, proxy and client commands.
const (
	envGateway  = "ELECTOR_GATEWAY"   // --gateway
	envAPIToken = "ELECTOR_API_TOKEN" // --api-token
)

// gatewayFlags are the flags `elector run` and `elector proxy` share: the
// gateways they follow, the API token they send, and their logs.
type gatewayFlags struct {
	gateway, apiToken   string
	logLevel, logFormat string
}

// register defines --gateway, --api-token, --log-level and --log-format on
// fs.
func (f *gatewayFlags) register(fs *pflag.FlagSet) {
	gatewayFlag(fs, &f.gateway, "the gateway's URL or host:port, or several separated by commas, tried in turn")
	fs.StringVar(&f.apiToken, "api-token", "", "API token sent as Authorization: Bearer, for gateways that require one (default $"+envAPIToken+")")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
}

// resolve takes the API token from the environment when --api-token is
// not given, and makes each gateway a URL; it runs after fs is parsed.
func (f *gatewayFlags) resolve(fs *pflag.FlagSet) {
	envDefault(fs, "api-token", envAPIToken, &f.apiToken)
	f.gateway = gatewayURL(f.gateway)
}

// gateways are the URLs of --gateway.
func (f *gatewayFlags) gateways() []string {
	var out []string
	for g := range strings.SplitSeq(f.gateway, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}

// checkGateways reports a --gateway that cannot work, or its absence.
func (f *gatewayFlags) checkGateways() error {
	for _, g := range f.gateways() {
		if client.New(g).BaseURL() == "" {
			return fmt.Errorf("--gateway %q is not an http(s) URL or a host:port such as 127.0.0.1:8080", g)
		}
	}
	if len(f.gateways()) == 0 {
		return errors.New("--gateway (or $" + envGateway + ") is required, e.g. --gateway http://127.0.0.1:8080")
	}
	return nil
}

// checkLog reports a --log-level or --log-format that cannot work.
func (f *gatewayFlags) checkLog() error {
	switch {
	case f.logLevel != "debug" && f.logLevel != "info" && f.logLevel != "warn" && f.logLevel != "error":
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	case f.logFormat != "text" && f.logFormat != "json":
		return fmt.Errorf("--log-format %q: want text or json", f.logFormat)
	}
	return nil
}

// logger is the logger --log-level and --log-format ask for, writing to w.
func (f *gatewayFlags) logger(w io.Writer) *slog.Logger {
	return newLogger(LogConfig{Level: f.logLevel, Format: f.logFormat}, w)
}

// clientOptions are the options of every client of the gateways; command
// names the command in the user agent.
func (f *gatewayFlags) clientOptions(command string) []client.Option {
	return []client.Option{client.WithUserAgent("elector-" + command + "/" + version), client.WithAPIToken(f.apiToken)}
}
