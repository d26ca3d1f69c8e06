package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/electorhq/elector/server"
)

// Where serve finds its configuration file when no --config flag is given.
const (
	envConfigFile  = "ELECTOR_CONFIG" // a path, like --config
	configFileName = "elector.yaml"   // read from the working directory if present
	envPrefix      = "ELECTOR"
)

// envPprof names the address a build with -tags pprof serves profiles on.
const envPprof = "ELECTOR_PPROF"

// setting is one configuration key: its name in a config file, in the
// environment and on the command line, and the field of Config it sets.
type setting struct {
	key   string // as in a config file: "elections.default_ttl"
	usage string
	field func(*Config) any // a *string, *bool, *int, *int64, *float64, *time.Duration, *[]time.Duration or *[]string
}

// settings lists every configuration key. A key missing here is unknown:
// a config file that sets it is rejected.
func settings() []setting {
	return []setting{
		{"listen", "TCP address of the HTTP API", func(c *Config) any { return &c.Listen }},
		{"log.level", "log level: debug, info, warn or error", func(c *Config) any { return &c.Log.Level }},
		{"log.format", "log format: text or json", func(c *Config) any { return &c.Log.Format }},
		{"log.requests", "log one line per HTTP request (an access log; 5xx answers are logged anyway)", func(c *Config) any { return &c.API.LogRequests }},
		{"backend.kind", "coordination backend: " + strings.Join(server.BackendKinds(), ", "), func(c *Config) any { return &c.Backend.Kind }},
		{"embedded.data_dir", "directory where the embedded backend stores elections", func(c *Config) any { return &c.Backend.Embedded.DataDir }},
		{"embedded.server_name", "name of the embedded NATS server (unique and stable in a cluster)", func(c *Config) any { return &c.Backend.Embedded.ServerName }},
		{"embedded.listen", "address for outside NATS clients of the embedded server (empty: none)", func(c *Config) any { return &c.Backend.Embedded.Listen }},
		{"embedded.cluster_listen", "address other embedded members route to (empty: no cluster)", func(c *Config) any { return &c.Backend.Embedded.ClusterListen }},
		{"embedded.cluster_advertise", "address the other embedded members are told to route to (empty: cluster_listen)", func(c *Config) any { return &c.Backend.Embedded.ClusterAdvertise }},
		{"embedded.cluster_name", "name of the embedded cluster", func(c *Config) any { return &c.Backend.Embedded.ClusterName }},
		{"embedded.routes", "comma-separated cluster addresses of the other embedded members", func(c *Config) any { return &c.Backend.Embedded.Routes }},
		{"nats.urls", "comma-separated NATS server URLs (backend nats)", func(c *Config) any { return &c.Backend.NATS.URLs }},
		{"nats.creds_file", "NATS user credentials file", func(c *Config) any { return &c.Backend.NATS.CredsFile }},
		{"nats.nkey_seed_file", "file holding an NATS nkey seed", func(c *Config) any { return &c.Backend.NATS.NKeySeedFile }},
		{"nats.token", "NATS token (prefer the environment)", func(c *Config) any { return &c.Backend.NATS.Token }},
		{"nats.user", "NATS user name", func(c *Config) any { return &c.Backend.NATS.User }},
		{"nats.password", "NATS password (prefer the environment)", func(c *Config) any { return &c.Backend.NATS.Password }},
		{"nats.ca_file", "PEM bundle trusted to sign the NATS servers' certificates", func(c *Config) any { return &c.Backend.NATS.CAFile }},
		{"nats.cert_file", "client certificate for NATS mutual TLS", func(c *Config) any { return &c.Backend.NATS.CertFile }},
		{"nats.key_file", "client key for NATS mutual TLS", func(c *Config) any { return &c.Backend.NATS.KeyFile }},
		{"nats.stream", "name of the JetStream stream of election records", func(c *Config) any { return &c.Backend.NATS.Stream }},
		{"nats.replicas", "replicas of the streams: 1, or 3 on a cluster (0: 3 for an embedded cluster, else 1)", func(c *Config) any { return &c.Backend.NATS.Replicas }},
		{"nats.history", "records kept per election for resuming event streams", func(c *Config) any { return &c.Backend.NATS.History }},
		{"etcd.endpoints", "comma-separated etcd endpoints (backend etcd)", func(c *Config) any { return &c.Backend.Etcd.Endpoints }},
		{"etcd.prefix", "etcd key prefix shared with concurrency.Election clients", func(c *Config) any { return &c.Backend.Etcd.Prefix }},
		{"etcd.username", "etcd user name", func(c *Config) any { return &c.Backend.Etcd.Username }},
		{"etcd.password", "etcd password (prefer the environment)", func(c *Config) any { return &c.Backend.Etcd.Password }},
		{"etcd.ca_file", "PEM bundle trusted to sign the etcd members' certificates", func(c *Config) any { return &c.Backend.Etcd.CAFile }},
		{"etcd.cert_file", "client certificate for etcd mutual TLS", func(c *Config) any { return &c.Backend.Etcd.CertFile }},
		{"etcd.key_file", "client key for etcd mutual TLS", func(c *Config) any { return &c.Backend.Etcd.KeyFile }},
		{"etcd.server_name", "name expected in the etcd members' certificates", func(c *Config) any { return &c.Backend.Etcd.ServerName }},
		{"etcd.dial_timeout", "time allowed to connect to an etcd member", func(c *Config) any { return &c.Backend.Etcd.DialTimeout }},
		{"etcd.request_timeout", "time allowed for each etcd request", func(c *Config) any { return &c.Backend.Etcd.RequestTimeout }},
		{"etcd.member_timeout", "time an etcd member may not answer before requests and watches move to the others", func(c *Config) any { return &c.Backend.Etcd.MemberTimeout }},
		{"etcd.write_batch", "most writing transactions sent to etcd as one while earlier ones are under way (1: each alone)", func(c *Config) any { return &c.Backend.Etcd.WriteBatch }},
		{"elections.default_ttl", "TTL of a candidate that names none", func(c *Config) any { return &c.Gateway.DefaultTTL }},
		{"elections.min_ttl", "smallest TTL a candidate may ask for", func(c *Config) any { return &c.Gateway.MinTTL }},
		{"elections.max_ttl", "largest TTL a candidate may ask for", func(c *Config) any { return &c.Gateway.MaxTTL }},
		{"elections.max_metadata_bytes", "largest candidate metadata, in bytes of compact JSON", func(c *Config) any { return &c.Gateway.MaxMetadataBytes }},
		{"elections.error_cooldown", "time a candidate in error stays out of line (new elections)", func(c *Config) any { return &c.Gateway.Defaults.ErrorCooldown }},
		{"elections.handover_delay", "delay before the next leader after a leader expires (new elections)", func(c *Config) any { return &c.Gateway.Defaults.HandoverDelay }},
		{"elections.holders", "how many candidates hold an election at once, 1 to 64 (new elections; above 1 needs the embedded or nats backend)", func(c *Config) any { return &c.Gateway.Defaults.Holders }},
		{"elections.idle_expiry", "delete an election with no candidate and no event for this long (0s: never)", func(c *Config) any { return &c.Gateway.IdleElectionExpiry }},
		{"http.max_body_bytes", "largest request body, in bytes", func(c *Config) any { return &c.API.MaxBodyBytes }},
		{"http.read_header_timeout", "time allowed to read request headers", func(c *Config) any { return &c.HTTP.ReadHeaderTimeout }},
		{"http.read_body_timeout", "time allowed to read a request body (408 past it)", func(c *Config) any { return &c.API.BodyTimeout }},
		{"http.write_timeout", "time allowed to write a response (0: none; event streams lift it)", func(c *Config) any { return &c.HTTP.WriteTimeout }},
		{"http.idle_timeout", "time an idle keep-alive connection stays open (0: none)", func(c *Config) any { return &c.HTTP.IdleTimeout }},
		{"http.shutdown_timeout", "time allowed to drain requests on SIGINT or SIGTERM", func(c *Config) any { return &c.HTTP.ShutdownTimeout }},
		{"sse.keep_alive", "interval of keep-alive comments on an idle event stream", func(c *Config) any { return &c.API.KeepAlive }},
		{"sse.retry", "reconnection delay advised to event stream clients", func(c *Config) any { return &c.API.RetryHint }},
		{"webhooks.allow_private_networks", "let webhooks reach loopback, private and link-local addresses", func(c *Config) any { return &c.Webhooks.AllowPrivateNetworks }},
		{"webhooks.request_timeout", "time allowed for one webhook delivery attempt", func(c *Config) any { return &c.Webhooks.RequestTimeout }},
		{"webhooks.retry_schedule", "comma-separated waits before each webhook retry", func(c *Config) any { return &c.Webhooks.RetrySchedule }},
		{"webhooks.begin_timeout", "time a new leader's own begin webhook has to answer 2xx", func(c *Config) any { return &c.Webhooks.BeginTimeout }},
		{"webhooks.claim_ttl", "how long a replica's claim on a webhook endpoint lasts unless renewed (0s: 20s, or twice webhooks.request_timeout if longer)", func(c *Config) any { return &c.Webhooks.ClaimTTL }},
		{"metrics.election_labels", "label per-election metrics with the election (false: sum over all elections)", func(c *Config) any { return &c.Metrics.ElectionLabels }},
		{"metrics.election_label_limit", "elections with per-election series of their own; the rest are summed as election=\"_other\" (0: no limit)", func(c *Config) any { return &c.Metrics.ElectionLabelLimit }},
		{"http.trusted_proxies", "comma-separated proxy addresses or CIDRs whose X-Forwarded-For names the client", func(c *Config) any { return &c.TrustedProxies }},
		{"auth.tokens", "API tokens: {name, sha256|file|env, scopes, elections} (JSON array in flags and the environment)", func(c *Config) any { return &c.Auth.Tokens }},
		{"auth.protect_operational", "require the read scope for /metrics, /docs and /openapi.*", func(c *Config) any { return &c.API.ProtectOperational }},
		{"tls.cert_file", "PEM certificate of the HTTP API (reloaded on SIGHUP and change)", func(c *Config) any { return &c.TLS.CertFile }},
		{"tls.key_file", "PEM key of the HTTP API", func(c *Config) any { return &c.TLS.KeyFile }},
		{"tls.client_ca_file", "PEM bundle trusted to sign client certificates", func(c *Config) any { return &c.TLS.ClientCAFile }},
		{"tls.client_auth", "client certificates: none, request or require", func(c *Config) any { return &c.TLS.ClientAuth }},
		{"limits.writes_per_second", "write requests per second per client (0: no limit)", func(c *Config) any { return &c.API.WriteRate }},
		{"limits.write_burst", "burst of write requests per client", func(c *Config) any { return &c.API.WriteBurst }},
		{"limits.heartbeats_per_second", "heartbeats per second per candidate (0: no limit)", func(c *Config) any { return &c.API.HeartbeatRate }},
		{"limits.heartbeat_burst", "burst of heartbeats per candidate", func(c *Config) any { return &c.API.HeartbeatBurst }},
		{"limits.reads_per_second", "read requests per second per client (0: no limit)", func(c *Config) any { return &c.API.ReadRate }},
		{"limits.read_burst", "burst of read requests per client", func(c *Config) any { return &c.API.ReadBurst }},
		{"limits.concurrent_reads", "most reads served at once on this replica (0: no limit)", func(c *Config) any { return &c.API.MaxReads }},
		{"limits.candidates_per_election", "most candidates in one election (0: no limit)", func(c *Config) any { return &c.Gateway.MaxCandidates }},
		{"limits.elections", "most elections (0: no limit)", func(c *Config) any { return &c.Gateway.MaxElections }},
		{"limits.sse_subscribers", "most event streams open at once on this replica (0: no limit)", func(c *Config) any { return &c.API.MaxStreams }},
	}
}

// env is the environment variable of s: ELECTOR_ELECTIONS_DEFAULT_TTL.
func (s setting) env() string {
	return envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(s.key, ".", "_"))
}

// flag is the command-line flag of s: elections-default-ttl.
func (s setting) flag() string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(s.key)
}

// newServeFlags returns the flags of `elector serve`: --config and one flag
// per setting, with DefaultConfig's values as defaults.
func newServeFlags(stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.StringP("config", "c", "", "config file (env "+envConfigFile+"; default ./"+configFileName+" if present)")
	def := DefaultConfig()
	for _, s := range settings() {
		usage := s.usage + " (" + s.key + ", env " + s.env() + ")"
		switch p := s.field(&def).(type) {
		case *string:
			fs.String(s.flag(), *p, usage)
		case *int:
			fs.Int(s.flag(), *p, usage)
		case *int64:
			fs.Int64(s.flag(), *p, usage)
		case *float64:
			fs.Float64(s.flag(), *p, usage)
		case *time.Duration:
			fs.Duration(s.flag(), *p, usage)
		case *bool:
			fs.Bool(s.flag(), *p, usage)
		case *[]time.Duration:
			fs.String(s.flag(), formatDurations(*p), usage)
		case *[]string:
			fs.String(s.flag(), strings.Join(*p, ","), usage)
		case *[]TokenConfig:
			fs.String(s.flag(), "", usage)
		}
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: elector serve [flags]\n\n"+
			"Starts the gateway. Each setting comes from its flag, else its ELECTOR_* environment\n"+
			"variable, else the config file, else its default.\n\nFlags:\n%s", fs.FlagUsages())
	}
	return fs
}

// loaded is a configuration and where it came from.
type loaded struct {
	Config Config
	// File is the config file read, "" if none.
	File string
	// UnknownEnv lists the ELECTOR_* variables that name no setting.
	UnknownEnv []string
}

// loadConfig builds serve's configuration from the parsed flags fs, the
// environment and the config file, in that order of precedence over the
// defaults, and validates it. Every error wraps errConfig and names the key
// at fault; every unknown key and bad value is reported at once.
func loadConfig(fs *pflag.FlagSet) (loaded, error) {
	var out loaded
	file, err := configFile(fs)
	if err != nil {
		return out, err
	}
	out.File = file

	var errs []error
	v := viper.New()
	def := DefaultConfig()
	for _, s := range settings() {
		v.SetDefault(s.key, reflectValue(s.field(&def)))
	}
	fileV := viper.New()
	if file != "" {
		var unknown []error
		if fileV, unknown, err = readConfigFile(file); err != nil {
			return out, err
		}
		errs = append(errs, unknown...)
		if err := v.MergeConfigMap(fileV.AllSettings()); err != nil {
			return out, fmt.Errorf("%w: file %s: %w", errConfig, file, err)
		}
	}
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	for _, s := range settings() {
		if err := v.BindPFlag(s.key, fs.Lookup(s.flag())); err != nil {
			return out, fmt.Errorf("%w: flag --%s: %w", errConfig, s.flag(), err)
		}
	}

	source := func(key string) string { return sourceOf(key, fs, fileV, file) }
	cfg := DefaultConfig()
	for _, s := range settings() {
		if err := decode(s.field(&cfg), v.Get(s.key)); err != nil {
			errs = append(errs, configError(s.key, source(s.key), "%s", err))
		}
	}
	if len(errs) == 0 {
		// Checked once every value could be read: a value that could
		// not would be checked as its default.
		errs = append(errs, cfg.validateAll(source)...)
	}
	if len(errs) > 0 {
		return out, configErrors(errs)
	}
	out.Config = cfg
	out.UnknownEnv = unknownEnv(os.Environ())
	return out, nil
}

// configErrors is every error of errs, each naming its key, as one error
// that wraps them all (and so errConfig): one error reads as before, more
// are listed one a line.
func configErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems in the configuration:", len(errs))
	for _, err := range errs {
		b.WriteString("\n  " + err.Error())
	}
	return &joinedError{msg: b.String(), errs: errs}
}

// joinedError is several errors with a message of its own.
type joinedError struct {
	msg  string
	errs []error
}

func (e *joinedError) Error() string   { return e.msg }
func (e *joinedError) Unwrap() []error { return e.errs }

// configFile returns the config file to read: --config, else
// $ELECTOR_CONFIG, else ./elector.yaml if it exists, else "".
func configFile(fs *pflag.FlagSet) (string, error) {
	if f := fs.Lookup("config"); f != nil && f.Changed {
		return f.Value.String(), nil
	}
	if p := os.Getenv(envConfigFile); p != "" {
		return p, nil
	}
	switch _, err := os.Stat(configFileName); {
	case err == nil:
		return configFileName, nil
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	default:
		return "", fmt.Errorf("%w: file %s: %w", errConfig, configFileName, err)
	}
}

// readConfigFile reads a YAML, JSON or TOML file (YAML for other
// extensions). Keys that name no setting are returned as errors, one per
// key, each with the key it most likely meant; err is a file that cannot be
// read.
func readConfigFile(path string) (fv *viper.Viper, unknown []error, err error) {
	fv = viper.New()
	fv.SetConfigFile(path)
	if ext := strings.TrimPrefix(filepath.Ext(path), "."); !slices.Contains(viper.SupportedExts, ext) {
		fv.SetConfigType("yaml")
	}
	if err := fv.ReadInConfig(); err != nil {
		return nil, nil, fmt.Errorf("%w: file %s: %w", errConfig, path, err)
	}
	var keys []string
	known := map[string]bool{}
	for _, s := range settings() {
		keys = append(keys, s.key)
		known[s.key] = true
	}
	found := fv.AllKeys()
	slices.Sort(found)
	for _, k := range found {
		if known[k] {
			continue
		}
		if i := slices.IndexFunc(keys, func(key string) bool { return strings.HasPrefix(key, k+".") }); i >= 0 {
			unknown = append(unknown, fmt.Errorf("%w: file %s: %s must be a map of keys such as %s",
				errConfig, path, k, strings.TrimPrefix(keys[i], k+".")))
			continue
		}
		hint := " (configs/elector.yaml lists every key)"
		if s := suggest(k, keys); s != "" {
			hint = fmt.Sprintf("; did you mean %q?", s)
		}
		unknown = append(unknown, fmt.Errorf("%w: file %s: unknown key %q%s", errConfig, path, k, hint))
	}
	return fv, unknown, nil
}

// sourceOf tells where the value of key came from, for error messages.
func sourceOf(key string, fs *pflag.FlagSet, fileV *viper.Viper, file string) string {
	for _, s := range settings() {
		if s.key != key {
			continue
		}
		if f := fs.Lookup(s.flag()); f != nil && f.Changed {
			return "flag --" + s.flag()
		}
		if os.Getenv(s.env()) != "" {
			return "environment " + s.env()
		}
		if fileV.IsSet(key) {
			return "file " + file
		}
		return "default"
	}
	return ""
}

// unknownEnv returns the names of ELECTOR_* variables in environ that name
// no setting, sorted.
func unknownEnv(environ []string) []string {
	// The config file's variable, and those of the client commands and of
	// the profiler, which serve shares a shell with: none of them is a
	// mistake to warn of.
	known := map[string]bool{envConfigFile: true, envGateway: true, envAPIToken: true, envToken: true, envPprof: true}
	for _, s := range settings() {
		known[s.env()] = true
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix+"_") && !known[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// reflectValue dereferences a field pointer from setting.field.
func reflectValue(p any) any {
	switch p := p.(type) {
	case *string:
		return *p
	case *int:
		return *p
	case *int64:
		return *p
	case *float64:
		return *p
	case *time.Duration:
		return *p
	case *bool:
		return *p
	case *[]time.Duration:
		return formatDurations(*p)
	case *[]string:
		return strings.Join(*p, ",")
	case *[]TokenConfig:
		return ""
	}
	return nil
}

// formatDurations writes a list of durations as a setting's value: "5s,30s".
func formatDurations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// decode stores raw, a value from viper (a default, a flag or environment
// string, or whatever a config file held), in the field p points to.
func decode(p any, raw any) error {
	if list, ok := p.(*[]string); ok {
		return decodeList(list, raw)
	}
	if tokens, ok := p.(*[]TokenConfig); ok {
		return decodeTokens(tokens, raw)
	}
	switch raw.(type) {
	case map[string]any, []any:
		return errors.New("must be a single value, not a list or a map")
	case nil:
		return errors.New("must have a value")
	}
	switch p := p.(type) {
	case *string:
		s, ok := raw.(string)
		if !ok {
			s = fmt.Sprint(raw)
		}
		*p = strings.TrimSpace(s)
	case *time.Duration:
		d, err := toDuration(raw)
		if err != nil {
			return err
		}
		*p = d
	case *bool:
		switch r := raw.(type) {
		case bool:
			*p = r
		default:
			b, err := strconv.ParseBool(strings.TrimSpace(fmt.Sprint(raw)))
			if err != nil {
				return fmt.Errorf("invalid boolean %q: use true or false", fmt.Sprint(raw))
			}
			*p = b
		}
	case *[]time.Duration:
		s, ok := raw.(string)
		if !ok {
			return fmt.Errorf("invalid list %v: use comma-separated durations such as 5s,30s,2m", raw)
		}
		var ds []time.Duration
		for _, part := range strings.Split(s, ",") {
			d, err := toDuration(part)
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
		*p = ds
	case *int:
		n, err := toInt(raw, strconv.IntSize)
		if err != nil {
			return err
		}
		*p = int(n)
	case *int64:
		n, err := toInt(raw, 64)
		if err != nil {
			return err
		}
		*p = n
	case *float64:
		f, err := toFloat(raw)
		if err != nil {
			return err
		}
		*p = f
	default:
		return fmt.Errorf("unsupported field type %T", p)
	}
	return nil
}

// toDuration accepts a time.Duration or a string such as "1m30s". A bare
// number is refused unless it is 0: "10" could mean seconds or nanoseconds.
func toDuration(raw any) (time.Duration, error) {
	switch r := raw.(type) {
	case time.Duration:
		return r, nil
	case string:
		s := strings.TrimSpace(r)
		if s == "0" {
			return 0, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: use a number with a unit, such as 500ms, 10s, 5m or 1h", r)
		}
		return d, nil
	case int, int64, float64:
		if r == 0 || r == int64(0) || r == 0.0 {
			return 0, nil
		}
		return 0, fmt.Errorf("invalid duration %v: give a unit, such as %vs", r, r)
	}
	return 0, fmt.Errorf("invalid duration %v: use a number with a unit, such as 10s", raw)
}

// toInt accepts an integer or a decimal string that fits in bits.
func toInt(raw any, bits int) (int64, error) {
	switch r := raw.(type) {
	case int:
		return int64(r), nil
	case int64:
		return r, nil
	case float64:
		if r == math.Trunc(r) && math.Abs(r) < 1<<53 {
			return int64(r), nil
		}
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(r), 10, bits)
		if err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("invalid integer %q: use a whole number such as 1024", fmt.Sprint(raw))
}

// toFloat accepts a number or a decimal string.
func toFloat(raw any) (float64, error) {
	switch r := raw.(type) {
	case int:
		return float64(r), nil
	case int64:
		return float64(r), nil
	case float64:
		return r, nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
		if err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, nil
		}
	}
	return 0, fmt.Errorf("invalid number %q: use a number such as 10 or 0.5", fmt.Sprint(raw))
}

// decodeList stores a list setting: a comma-separated string (flags,
// environment, defaults) or a list of strings (a config file).
func decodeList(p *[]string, raw any) error {
	var parts []string
	switch r := raw.(type) {
	case string:
		parts = strings.Split(r, ",")
	case []any:
		for _, x := range r {
			s, ok := x.(string)
			if !ok {
				return fmt.Errorf("invalid list item %v: use strings", x)
			}
			parts = append(parts, s)
		}
	case []string:
		parts = r
	default:
		return fmt.Errorf("invalid list %v: use a list of strings, or one comma-separated string", raw)
	}
	var out []string
	for _, s := range parts {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	*p = out
	return nil
}
