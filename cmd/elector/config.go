package main

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"

	"github.com/electorhq/elector/internal/fielderr"
	"github.com/electorhq/elector/server"
)

// Config is the configuration of `elector serve`: the server's
// (server.Config, whose parts are each component's own configuration
// type, their fields' comments giving defaults and bounds and their
// Validate checking them), and what only the command reads: the logs it
// writes to stderr, API tokens given by hash, file or environment, and
// trusted proxies as written. The settings table (load.go) gives each
// field its key, and configs/elector.yaml documents the keys for
// operators. serverConfig maps it onto server.Config.
//
// A zero duration or limit turns off what can be off and takes the
// default everywhere else (webhooks.claim_ttl's and nats.replicas' follow
// other settings), as server.Config says; a negative one is refused.
// DefaultConfig writes the defaults out.
type Config struct {
	server.Config
	Log  LogConfig
	Auth AuthConfig
	// TrustedProxies are the addresses or CIDR prefixes of proxies whose
	// X-Forwarded-For names the client, for the rate limit. Key
	// http.trusted_proxies, default none (comma-separated list).
	TrustedProxies []string
}

// LogConfig configures the logs written to stderr.
type LogConfig struct {
	// Level is debug, info, warn or error. Key log.level, default info.
	Level string
	// Format is text or json. Key log.format, default text.
	Format string
}

// DefaultConfig returns the configuration used where nothing else is set:
// server.DefaultConfig, with text logs at info.
func DefaultConfig() Config {
	return Config{Config: server.DefaultConfig(), Log: LogConfig{Level: "info", Format: "text"}}
}

// errConfig marks every configuration error, found by loading or by the
// server; run exits 2 on it.
var errConfig = server.ErrConfig

// configError names the key that is wrong and where its value came from.
func configError(key, source, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if source != "" {
		msg += " (from " + source + ")"
	}
	return fmt.Errorf("%w: %s: %s", errConfig, key, msg)
}

// Validate reports the first value of c that cannot work, naming its key.
// It checks what only the command reads (logs, tokens, proxies) and runs
// the server's Validate, naming the keys of the fields it finds at fault.
// Source, if not nil, tells where a key's value came from.
func (c Config) Validate(source func(key string) string) error {
	if errs := c.validateAll(source); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// validateAll is Validate reporting every value that cannot work, one
// error per check that fails.
func (c Config) validateAll(source func(key string) string) []error {
	if source == nil {
		source = func(string) string { return "" }
	}
	oneOf := func(key, v string, allowed []string) error {
		if !slices.Contains(allowed, v) {
			return configError(key, source(key), "%q is not one of %s", v, strings.Join(allowed, ", "))
		}
		return nil
	}
	var errs []error
	for _, err := range []error{
		oneOf("log.level", c.Log.Level, []string{"debug", "info", "warn", "error"}),
		oneOf("log.format", c.Log.Format, []string{"text", "json"}),
		c.validateProduction(source),
	} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if joined, ok := c.Config.Validate().(interface{ Unwrap() []error }); ok {
		for _, err := range joined.Unwrap() {
			errs = append(errs, c.keyedError(err, source))
		}
	}
	return errs
}

// sections names the parts of server.Config as the keys of their fields
// begin, for a field that no key sets.
func sections() []struct{ path, name string } {
	return []struct{ path, name string }{
		{"Backend.Embedded", "embedded"}, {"Backend.NATS", "nats"}, {"Backend.Etcd", "etcd"}, {"Backend", "backend"},
		{"Gateway", "elections"}, {"API", "api"}, {"Webhooks", "webhooks"}, {"HTTP", "http"}, {"TLS", "tls"},
		{"Metrics", "metrics"},
	}
}

// keyedError turns err, one problem server.Config.Validate found, into a
// configuration error naming the keys of the fields at fault, as a
// *fielderr.Error names them, and where the first came from. A field that
// no key sets is named by its Go name under its section ("nats:
// MarkerTTL: …"), and so is an error that names no field.
func (c *Config) keyedError(err error, source func(string) string) error {
	var fe *fielderr.Error
	if !errors.As(err, &fe) {
		return err
	}
	key := c.keyOf(fe.Field)
	var msg string
	if key != "" {
		msg = fe.Name(c.keyOf)
	} else {
		path, section := fe.Field, ""
		for _, s := range sections() {
			if fe.Field == s.path || strings.HasPrefix(fe.Field, s.path+".") {
				path, section = s.path, s.name
				break
			}
		}
		msg = fe.Name(func(field string) string {
			switch k := c.keyOf(field); {
			case k != "":
				return k
			case field == path:
				return section
			}
			return strings.TrimPrefix(field, path+".")
		})
		if fe.Field != path {
			msg = section + ": " + msg
		}
	}
	if src := source(key); src != "" {
		msg += " (from " + src + ")"
	}
	return fmt.Errorf("%w: %s", errConfig, msg)
}

// keyOf returns the key of the setting that sets field, a Go path in
// server.Config ("Gateway.Defaults.Holders", dotted through nested structs
// and pointers). It returns "" when no setting sets the field.
func (c *Config) keyOf(field string) string {
	v := reflect.ValueOf(&c.Config).Elem()
	for name := range strings.SplitSeq(field, ".") {
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return ""
		}
		if v = v.FieldByName(name); !v.IsValid() {
			return ""
		}
	}
	for _, s := range settings() {
		p := reflect.ValueOf(s.field(c))
		if p.Pointer() == v.Addr().Pointer() && p.Elem().Type() == v.Type() {
			return s.key
		}
	}
	return ""
}

// serverConfig is the configuration of the server: c's, with its API
// tokens read and its trusted proxies parsed, logging to log. c is valid;
// the errors are Validate's.
func (c Config) serverConfig(log *slog.Logger) (server.Config, error) {
	tokens, err := c.Auth.apiTokens()
	if err != nil {
		return server.Config{}, configError("auth.tokens", "", "%v", err)
	}
	proxies, err := parseTrustedProxies(c.TrustedProxies)
	if err != nil {
		return server.Config{}, configError("http.trusted_proxies", "", "%v", err)
	}
	s := c.Config
	s.API.Tokens = tokens
	s.API.TrustedProxies = proxies
	s.Logger = log
	return s, nil
}
