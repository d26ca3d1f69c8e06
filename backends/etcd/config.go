package etcd

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/fielderr"
)

// Defaults of Config.
const (
	DefaultEndpoint       = "127.0.0.1:2379"
	DefaultPrefix         = "elector"
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
	DefaultMemberTimeout  = 600 * time.Millisecond
	DefaultWriteBatch     = batchMost
)

// Config says how to reach etcd and where elector's keys live.
type Config struct {
	// Endpoints are etcd client URLs or host:port pairs, one per member
	// of the cluster: the backend connects to each, spreads its requests
	// over those that answer, and moves off one that stops answering (see
	// MemberTimeout). Default [DefaultEndpoint].
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
	// MemberTimeout is how long a member may leave the backend's probe
	// (every MemberTimeout/3) unanswered before the backend stops sending
	// it requests, tries the requests waiting on it with another member,
	// and moves its watches elsewhere; a read that waits on a member this
	// long is tried with another one too. It bounds what a stopped or cut
	// off member costs a request to about this much, and should stay well
	// above the members' answer time under load. Default
	// DefaultMemberTimeout.
	MemberTimeout time.Duration
	// WriteBatch is the most writing transactions a replica sends to etcd
	// as one while its earlier writes are under way (group commit: see
	// batch.go); 1 sends each alone. A write that finds none under way is
	// sent at once either way. Default DefaultWriteBatch.
	WriteBatch int
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
	if c.MemberTimeout <= 0 {
		c.MemberTimeout = DefaultMemberTimeout
	}
	if c.WriteBatch == 0 {
		c.WriteBatch = DefaultWriteBatch
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
	case c.MemberTimeout < 0:
		return bad("MemberTimeout", "%s is negative; 0 takes the default, %s", c.MemberTimeout, DefaultMemberTimeout)
	case c.WriteBatch < 0 || c.WriteBatch > batchMost:
		return bad("WriteBatch", "%d is out of range: 1 (each write alone) to %d; 0 takes the default, %d", c.WriteBatch, batchMost, DefaultWriteBatch)
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

// Keep-alive of the gRPC connection to each member: a ping after 10s
// without traffic (the least gRPC's client allows), and the connection is
// dropped when the ping is not answered within 3s. Pings are sent only
// while a request or watch is under way (PermitWithoutStream false):
// etcd's server refuses pings on an idle connection (it enforces
// PermitWithoutStream false, and a ping at most every 5s,
// --grpc-keepalive-min-time) and ends a connection that sends them with
// GOAWAY "too_many_pings". The keep-alive is only a backstop for long
// streams; a member that stops answering is found within MemberTimeout by
// the backend's own probe (see members.run).
const (
	keepAliveTime    = 10 * time.Second
	keepAliveTimeout = 3 * time.Second
)

// reconnect is how gRPC connects to a member again after losing it: at
// first after 100ms, then backing off to at most a second between
// attempts (gRPC's default goes up to two minutes, so a member back after
// a few seconds would wait seconds more), each attempt bounded by
// DialTimeout.
func (c Config) reconnect() grpc.DialOption {
	return grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
		MinConnectTimeout: c.DialTimeout,
	})
}

// client connects to one member at url; the client ends with ctx.
func (c Config) client(ctx context.Context, url string) (*clientv3.Client, error) {
	t, err := c.tls()
	if err != nil {
		return nil, err
	}
	// No MaxCallSendMsgSize or MaxCallRecvMsgSize: writes are sent with
	// clientv3's defaults for them (txnCallOpts).
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            []string{url},
		Context:              ctx,
		DialTimeout:          c.DialTimeout,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		PermitWithoutStream:  false,
		DialOptions:          []grpc.DialOption{c.reconnect()},
		TLS:                  t,
		Username:             c.Username,
		Password:             c.Password,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connect %s: %w: %w", url, gateway.ErrUnavailable, err)
	}
	return cli, nil
}
