package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/internal/fielderr"
	"github.com/electorhq/elector/server"
)

func TestDefaultConfigIsValid(t *testing.T) {
	if err := server.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestValidateNamesTheFieldByItsPathInConfig: every problem wraps
// ErrConfig and a *fielderr.Error naming the field, and the fields it
// mentions, by their paths in Config, whoever checks it.
func TestValidateNamesTheFieldByItsPathInConfig(t *testing.T) {
	tests := []struct {
		name   string
		change func(*server.Config)
		field  string
		msg    string
	}{
		{"listen", func(c *server.Config) { c.Listen = "" }, "Listen", "Listen: an address such as 127.0.0.1:8080 is required"},
		{"backend kind", func(c *server.Config) { c.Backend.Kind = "zookeeper" }, "Backend.Kind", `Backend.Kind: "zookeeper" is not one of embedded, nats, etcd, memory`},
		{"embedded", func(c *server.Config) { c.Backend.Embedded.DataDir = "" }, "Backend.Embedded.DataDir", "Backend.Embedded.DataDir: a directory is required"},
		{"gateway, mentioning another field", func(c *server.Config) { c.Gateway.MinTTL, c.Gateway.MaxTTL = time.Minute, time.Second },
			"Gateway.MaxTTL", "Gateway.MaxTTL: 1s is below Gateway.MinTTL (1m0s)"},
		{"tls", func(c *server.Config) { c.TLS.KeyFile = "k.pem" }, "TLS.KeyFile", "TLS.KeyFile: needs TLS.CertFile"},
		{"http", func(c *server.Config) { c.HTTP.IdleTimeout = -time.Second }, "HTTP.IdleTimeout", "HTTP.IdleTimeout: -1s is below the minimum 0s"},
		{"metrics", func(c *server.Config) { c.Metrics.ElectionLabelLimit = -1 }, "Metrics.ElectionLabelLimit", "Metrics.ElectionLabelLimit: -1 is negative"},
		{"api", func(c *server.Config) { c.API.KeepAlive = time.Millisecond }, "API.KeepAlive", "API.KeepAlive: 1ms is below the minimum 1s"},
		{"webhooks", func(c *server.Config) { c.Webhooks.ClaimTTL = 15 * time.Second }, "Webhooks.ClaimTTL", "Webhooks.ClaimTTL: 15s must be at least 2× Webhooks.RequestTimeout (10s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := server.DefaultConfig()
			tt.change(&c)
			err := c.Validate()
			var fe *fielderr.Error
			if !errors.Is(err, server.ErrConfig) || !errors.As(err, &fe) || fe.Field != tt.field || !strings.HasPrefix(fe.Error(), tt.msg) {
				t.Fatalf("Validate: %v; want a configuration error about %s starting %q", err, tt.field, tt.msg)
			}
		})
	}
}

// TestValidateReportsEveryProblem: one error per problem, joined.
func TestValidateReportsEveryProblem(t *testing.T) {
	c := server.DefaultConfig()
	c.Listen, c.HTTP.WriteTimeout, c.HTTP.IdleTimeout = "", -time.Second, -time.Second
	joined, ok := c.Validate().(interface{ Unwrap() []error })
	if !ok || len(joined.Unwrap()) != 3 {
		t.Fatalf("Validate: %v; want three errors", joined)
	}
}

// TestWithBackendLeavesTheBackendSectionUnchecked: a server over a given
// backend does not check the backend it would otherwise open.
func TestWithBackendLeavesTheBackendSectionUnchecked(t *testing.T) {
	c := server.DefaultConfig()
	c.Backend.Kind = ""
	if _, err := server.New(c); !errors.Is(err, server.ErrConfig) {
		t.Fatalf("New without a backend kind: %v", err)
	}
	if _, err := server.New(c, server.WithBackend(memory.New())); err != nil {
		t.Fatalf("New over a given backend: %v", err)
	}
}
