package etcd

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/fielderr"
)

// Defaults of Config.
const (
	DefaultEndpoint       = "127.0.0.1:2379"
	DefaultPrefix         = "elector"
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
)

// Config says how to reach etcd and where elector's keys live.
type Config struct {
	// Endpoints are etcd client URLs or host:port pairs, any member of the
	// cluster; the client fails over between them. Default
	// [DefaultEndpoint].
	Endpoints []string
	// Prefix is the key prefix of every election: candidates of election e
	// are <Prefix>/<e>/<lease-hex>, so a concurrency.Election (or etcdctl
	// elect) on <Prefix>/<e> shares its line. Elector's own keys are under
	// <Prefix>/_elector/. No trailing slash. Default DefaultPrefix.
	Prefix string
	// Username and Password enable etcd authentication. Default none.
	Username, Password string
	// CAFile verifies the members' certificates; CertFile and KeyFile are
	// the client certificate. Setting any of them enables TLS, as does an
	// https:// endpoint. Default none (plain text).
	CAFile, CertFile, KeyFile string
	// ServerName overrides the name checked in the members' certificates.
	// Default the endpoint's host.
	ServerName string
	// DialTimeout bounds connecting to a member. Default DefaultDialTimeout.
	DialTimeout time.Duration
	// RequestTimeout bounds each request to etcd; a request that runs out
	// of it fails with gateway.ErrUnavailable. Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Logger receives the backend's logs. Default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if len(c.Endpoints) == 0 {
		c.Endpoints = []string{DefaultEndpoint}
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first field of c that cannot work, as a
// *fielderr.Error wrapping gateway.ErrInvalid. A zero field takes its
// default; a negative timeout is refused.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("etcd: %w", fielderr.Errorf(field, format, args...).Wrap(gateway.ErrInvalid))
	}
	switch {
	case c.DialTimeout < 0:
		return bad("DialTimeout", "%s is negative; 0 takes the default, %s", c.DialTimeout, DefaultDialTimeout)
	case c.RequestTimeout < 0:
		return bad("RequestTimeout", "%s is negative; 0 takes the default, %s", c.RequestTimeout, DefaultRequestTimeout)
	}
	c = c.withDefaults()
	switch {
	case strings.HasSuffix(c.Prefix, "/") || strings.Contains(c.Prefix, "//"):
		return bad("Prefix", "%q must not end in '/' or contain '//'", c.Prefix)
	case c.CertFile != "" && c.KeyFile == "":
		return bad("CertFile", "needs {KeyFile}")
	case c.KeyFile != "" && c.CertFile == "":
		return bad("KeyFile", "needs {CertFile}")
	}
	for _, e := range c.Endpoints {
		if strings.TrimSpace(e) == "" {
			return bad("Endpoints", "an empty endpoint")
		}
	}
	return nil
}

func (c Config) tls() (*tls.Config, error) {
	https := false
	for _, e := range c.Endpoints {
		https = https || strings.HasPrefix(e, "https://")
	}
	if c.CAFile == "" && c.CertFile == "" && !https {
		return nil, nil
	}
	info := transport.TLSInfo{CertFile: c.CertFile, KeyFile: c.KeyFile, TrustedCAFile: c.CAFile, ServerName: c.ServerName}
	if c.CertFile == "" && c.CAFile == "" {
		return &tls.Config{ServerName: c.ServerName, MinVersion: tls.VersionTLS12}, nil
	}
	t, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd: tls: %v: %w", err, gateway.ErrInvalid)
	}
	return t, nil
}

func (c Config) client() (*clientv3.Client, error) {
	t, err := c.tls()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            c.Endpoints,
		DialTimeout:          c.DialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		TLS:                  t,
		Username:             c.Username,
		Password:             c.Password,
		PermitWithoutStream:  true,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connect %v: %w: %w", c.Endpoints, gateway.ErrUnavailable, err)
	}
	return cli, nil
}
