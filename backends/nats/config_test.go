package nats

import (
	"errors"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/fielderr"
)

// TestConfigValidateNamesTheFieldAtFault: each value that cannot work is
// refused as a *fielderr.Error naming its field and wrapping
// ErrInvalidConfig; zero values take their defaults.
func TestConfigValidateNamesTheFieldAtFault(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string // "" for valid
	}{
		{"zero value", Config{}, ""},
		{"three replicas", Config{Replicas: 3}, ""},
		{"client certificate", Config{CertFile: "c.pem", KeyFile: "k.pem"}, ""},
		{"user and password", Config{User: "u", Password: "p"}, ""},
		{"stream with a dot", Config{Stream: "A.B"}, "Stream"},
		{"subject prefix with a wildcard", Config{SubjectPrefix: "el*"}, "SubjectPrefix"},
		{"two replicas", Config{Replicas: 2}, "Replicas"},
		{"negative replicas", Config{Replicas: -1}, "Replicas"},
		{"negative history", Config{History: -1}, "History"},
		{"marker ttl below a second", Config{MarkerTTL: time.Millisecond}, "MarkerTTL"},
		{"negative sweep interval", Config{SweepInterval: -time.Second}, "SweepInterval"},
		{"negative op timeout", Config{OpTimeout: -time.Second}, "OpTimeout"},
		{"certificate without key", Config{CertFile: "c.pem"}, "CertFile"},
		{"key without certificate", Config{KeyFile: "k.pem"}, "KeyFile"},
		{"token and user", Config{Token: "t", User: "u"}, "Token"},
		{"empty url", Config{URLs: []string{"nats://a:4222", " "}}, "URLs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *fielderr.Error
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate: %v; want ErrInvalidConfig naming %s", err, tt.field)
			}
		})
	}
}

// TestEmbeddedConfigValidateNamesTheFieldAtFault: each value of an
// embedded server's configuration that cannot work is refused as a
// *fielderr.Error naming its field and wrapping ErrInvalidConfig, and
// StartEmbedded refuses it before it starts a server.
func TestEmbeddedConfigValidateNamesTheFieldAtFault(t *testing.T) {
	dir := t.TempDir()
	cluster := func(routes ...string) EmbeddedConfig {
		return EmbeddedConfig{DataDir: dir, ClusterListen: "127.0.0.1:0", Routes: routes}
	}
	tests := []struct {
		name  string
		cfg   EmbeddedConfig
		field string // "" for valid
	}{
		{"only a data dir", EmbeddedConfig{DataDir: dir}, ""},
		{"client listener on a free port", EmbeddedConfig{DataDir: dir, Listen: "127.0.0.1:-1"}, ""},
		{"routes as host:port and url", cluster("10.0.0.2:6222", "nats://[::1]:6223"), ""},
		{"no data dir", EmbeddedConfig{}, "DataDir"},
		{"blank data dir", EmbeddedConfig{DataDir: " "}, "DataDir"},
		{"server name with a space", EmbeddedConfig{DataDir: dir, ServerName: "node 1"}, "ServerName"},
		{"cluster name with a space", EmbeddedConfig{DataDir: dir, ClusterName: "my cluster"}, "ClusterName"},
		{"negative ready timeout", EmbeddedConfig{DataDir: dir, ReadyTimeout: -time.Second}, "ReadyTimeout"},
		{"listen without a port", EmbeddedConfig{DataDir: dir, Listen: "127.0.0.1"}, "Listen"},
		{"listen on a port out of range", EmbeddedConfig{DataDir: dir, Listen: ":70000"}, "Listen"},
		{"cluster listen with a named port", EmbeddedConfig{DataDir: dir, ClusterListen: "127.0.0.1:nats"}, "ClusterListen"},
		{"routes without a cluster listener", EmbeddedConfig{DataDir: dir, Routes: []string{"10.0.0.2:6222"}}, "Routes"},
		{"route without a port", cluster("10.0.0.2"), "Routes"},
		{"route on port 0", cluster("10.0.0.2:0"), "Routes"},
		{"route that is no url", cluster("nats://[::1"), "Routes"},
		{"empty route", cluster("10.0.0.2:6222", ""), "Routes"},
		{"advertise without a cluster listener", EmbeddedConfig{DataDir: dir, ClusterAdvertise: "10.0.0.1:6222"}, "ClusterAdvertise"},
		{"advertise without a port", EmbeddedConfig{DataDir: dir, ClusterListen: "127.0.0.1:0", ClusterAdvertise: "10.0.0.1"}, "ClusterAdvertise"},
		{"advertise on port 0", EmbeddedConfig{DataDir: dir, ClusterListen: "127.0.0.1:0", ClusterAdvertise: "10.0.0.1:0"}, "ClusterAdvertise"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *fielderr.Error
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate: %v; want ErrInvalidConfig naming %s", err, tt.field)
			}
			if e, err := StartEmbedded(tt.cfg, testLogger(t)); !errors.As(err, &fe) || fe.Field != tt.field {
				if e != nil {
					e.Shutdown()
				}
				t.Fatalf("StartEmbedded: %v; want the error naming %s", err, tt.field)
			}
		})
	}
}
