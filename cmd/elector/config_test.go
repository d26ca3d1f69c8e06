package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/server"
)

// isolate clears every ELECTOR_* variable serve reads and moves the test to
// an empty working directory, so that the developer's environment and files
// cannot leak into a test. Tests that call it cannot be parallel.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv(envConfigFile, "")
	for _, s := range settings() {
		t.Setenv(s.env(), "")
	}
	// Variables of the tests' own (ELECTOR_CONFORMANCE_REQUIRE, ELECTOR_SOAK
	// …) are no settings: gone for the test, back after it.
	for _, name := range unknownEnv(os.Environ()) {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	t.Chdir(t.TempDir())
}

// writeFile writes content to name in a new temporary directory and
// returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// load parses args as serve's flags and loads the configuration.
func load(t *testing.T, args ...string) (loaded, error) {
	t.Helper()
	fs := newServeFlags(io.Discard)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return loadConfig(fs)
}

// loadFrom isolates the test, sets env, writes file (if not "") as the
// --config file, and loads the configuration with args after it.
func loadFrom(t *testing.T, file string, env map[string]string, args []string) (loaded, error) {
	t.Helper()
	isolate(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	if file != "" {
		args = append([]string{"--config", writeFile(t, "elector.yaml", file)}, args...)
	}
	return load(t, args...)
}

func TestConfigPrecedenceFlagOverEnvOverFileOverDefault(t *testing.T) {
	const file = "listen: 127.0.0.1:1111\nelections:\n  default_ttl: 20s\n  max_metadata_bytes: 2048\n"
	tests := []struct {
		name     string
		file     string
		env      map[string]string
		args     []string
		listen   string
		ttl      time.Duration
		metadata int
	}{
		{name: "defaults", listen: server.DefaultListen, ttl: 10 * time.Second, metadata: 1024},
		{name: "file over defaults", file: file, listen: "127.0.0.1:1111", ttl: 20 * time.Second, metadata: 2048},
		{
			name: "env over file", file: file,
			env:    map[string]string{"ELECTOR_LISTEN": "127.0.0.1:2222", "ELECTOR_ELECTIONS_DEFAULT_TTL": "30s"},
			listen: "127.0.0.1:2222", ttl: 30 * time.Second, metadata: 2048,
		},
		{
			name: "flag over env", file: file,
			env:    map[string]string{"ELECTOR_LISTEN": "127.0.0.1:2222", "ELECTOR_ELECTIONS_DEFAULT_TTL": "30s"},
			args:   []string{"--listen", "127.0.0.1:3333", "--elections-default-ttl=40s"},
			listen: "127.0.0.1:3333", ttl: 40 * time.Second, metadata: 2048,
		},
		{
			name: "each key from its highest source", file: file,
			env:    map[string]string{"ELECTOR_ELECTIONS_DEFAULT_TTL": "30s", "ELECTOR_ELECTIONS_MAX_METADATA_BYTES": "4096"},
			args:   []string{"--listen", "127.0.0.1:3333"},
			listen: "127.0.0.1:3333", ttl: 30 * time.Second, metadata: 4096,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := loadFrom(t, tt.file, tt.env, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			c := l.Config
			if c.Listen != tt.listen || c.Gateway.DefaultTTL != tt.ttl || c.Gateway.MaxMetadataBytes != tt.metadata {
				t.Errorf("got listen %s, default_ttl %s, max_metadata_bytes %d; want %s, %s, %d",
					c.Listen, c.Gateway.DefaultTTL, c.Gateway.MaxMetadataBytes, tt.listen, tt.ttl, tt.metadata)
			}
		})
	}
}

func TestConfigFileIsFoundByEnvThenWorkingDirectory(t *testing.T) {
	isolate(t)
	if l, err := load(t); err != nil || l.File != "" {
		t.Fatalf("with no file: got file %q, err %v; want none", l.File, err)
	}
	if err := os.WriteFile(configFileName, []byte("listen: 127.0.0.1:1111\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := load(t)
	if err != nil || l.File != configFileName || l.Config.Listen != "127.0.0.1:1111" {
		t.Fatalf("./elector.yaml: got file %q, listen %q, err %v", l.File, l.Config.Listen, err)
	}
	t.Setenv(envConfigFile, writeFile(t, "other.yaml", "listen: 127.0.0.1:2222\n"))
	if l, err = load(t); err != nil || l.Config.Listen != "127.0.0.1:2222" {
		t.Fatalf("$ELECTOR_CONFIG: got listen %q, err %v", l.Config.Listen, err)
	}
	p := writeFile(t, "flag.json", `{"listen": "127.0.0.1:3333"}`)
	if l, err = load(t, "-c", p); err != nil || l.Config.Listen != "127.0.0.1:3333" || l.File != p {
		t.Fatalf("--config: got file %q, listen %q, err %v", l.File, l.Config.Listen, err)
	}
}

func TestConfigRejectsNamingTheKeyAndSource(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		args []string
		want []string // substrings of the error
	}{
		{name: "unknown top-level key", file: "listn: 127.0.0.1:1\n", want: []string{`unknown key "listn"`}},
		{name: "unknown nested key", file: "elections:\n  default_tll: 5s\n", want: []string{`unknown key "elections.default_tll"`}},
		{name: "section that is not a map", file: "http: 5\n", want: []string{"http must be a map"}},
		{name: "bad duration in file", file: "elections:\n  min_ttl: soon\n", want: []string{"elections.min_ttl", `invalid duration "soon"`, "from file"}},
		{name: "duration without unit", file: "sse:\n  retry: 5\n", want: []string{"sse.retry", "give a unit"}},
		{name: "list for a value", file: "listen: [a, b]\n", want: []string{"listen", "single value"}},
		{name: "bad duration in env", env: map[string]string{"ELECTOR_HTTP_IDLE_TIMEOUT": "2 minutes"}, want: []string{"http.idle_timeout", "environment ELECTOR_HTTP_IDLE_TIMEOUT"}},
		{name: "bad integer in env", env: map[string]string{"ELECTOR_HTTP_MAX_BODY_BYTES": "64KiB"}, want: []string{"http.max_body_bytes", "invalid integer"}},
		{name: "bad duration flag", args: []string{"--elections-max-ttl=1ms"}, want: []string{"elections.max_ttl", "flag --elections-max-ttl"}},
		{name: "unknown log level", args: []string{"--log-level", "loud"}, want: []string{"log.level", `"loud"`}},
		{name: "unknown log format", file: "log:\n  format: xml\n", want: []string{"log.format", "text, json"}},
		{name: "unknown backend", env: map[string]string{"ELECTOR_BACKEND_KIND": "zookeeper"}, want: []string{"backend.kind", "zookeeper"}},
		{name: "default ttl above max", file: "elections:\n  default_ttl: 2h\n", want: []string{"elections.default_ttl", "outside"}},
		{name: "negative cooldown", args: []string{"--elections-error-cooldown=-1s"}, want: []string{"elections.error_cooldown"}},
		{name: "handover delay too long", file: "elections:\n  handover_delay: 2h\n", want: []string{"elections.handover_delay"}},
		{name: "tiny body limit", file: "http:\n  max_body_bytes: 10\n", want: []string{"http.max_body_bytes"}},
		{name: "metadata bound too small", file: "elections:\n  max_metadata_bytes: 1\n", want: []string{"elections.max_metadata_bytes"}},
		{name: "empty listen", args: []string{"--listen="}, want: []string{"listen", "required"}},
		{name: "keep-alive too short", file: "sse:\n  keep_alive: 10ms\n", want: []string{"sse.keep_alive"}},
		{name: "malformed yaml", file: "listen: [\n", want: []string{"file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadFrom(t, tt.file, tt.env, tt.args)
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestServeExitsWithStatus2OnBadConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown key", []string{"--config", "FILE"}, `unknown key "elections.bogus"`},
		{"bad duration", []string{"--elections-default-ttl", "ten"}, "--elections-default-ttl"},
		{"unknown flag", []string{"--bogus"}, "unknown flag: --bogus"},
		{"missing config file", []string{"--config", "/nonexistent/elector.yaml"}, "/nonexistent/elector.yaml"},
		{"stray argument", []string{"now"}, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			file := writeFile(t, "elector.yaml", "elections:\n  bogus: 1\n")
			args := []string{"serve"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "FILE", file))
			}
			var stdout, stderr strings.Builder
			if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.want)
			}
		})
	}
}

func TestEveryFileInConfigsLoads(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "configs", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("configs/ holds no file")
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			isolate(t)
			if _, err := load(t, "--config", abs); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestConfigsElectorYAMLStatesTheDefaults(t *testing.T) {
	p, err := filepath.Abs(filepath.Join("..", "..", "configs", "elector.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	isolate(t)
	fv, unknown, err := readConfigFile(p)
	if err != nil || len(unknown) > 0 {
		t.Fatal(err, unknown)
	}
	for _, s := range settings() {
		if !fv.IsSet(s.key) {
			t.Errorf("configs/elector.yaml does not document %s", s.key)
		}
	}
	l, err := load(t, "--config", p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Config, DefaultConfig()) {
		t.Errorf("configs/elector.yaml gives\n%+v\nbut the defaults are\n%+v", l.Config, DefaultConfig())
	}
}

func TestDefaultConfigIsValid(t *testing.T) {
	if err := DefaultConfig().Validate(nil); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownEnvListsOnlyStrayElectorVariables(t *testing.T) {
	got := unknownEnv([]string{"ELECTOR_LISTEN=x", "ELECTOR_LISTN=x", "ELECTOR_CONFIG=y", "HOME=/", "ELECTOR_SSE_RETRY=1s", "ELECTOR_A=1", "ELECTOR_GATEWAY=http://g", "ELECTOR_API_TOKEN=t", "ELECTOR_CANDIDATE_TOKEN=c", "ELECTOR_PPROF=:6060"})
	want := []string{"ELECTOR_A", "ELECTOR_LISTN"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestSettingNames(t *testing.T) {
	tests := []struct{ key, env, flag string }{
		{"listen", "ELECTOR_LISTEN", "listen"},
		{"log.level", "ELECTOR_LOG_LEVEL", "log-level"},
		{"elections.max_metadata_bytes", "ELECTOR_ELECTIONS_MAX_METADATA_BYTES", "elections-max-metadata-bytes"},
	}
	for _, tt := range tests {
		s := setting{key: tt.key}
		if s.env() != tt.env || s.flag() != tt.flag {
			t.Errorf("%s: got env %s flag %s, want %s %s", tt.key, s.env(), s.flag(), tt.env, tt.flag)
		}
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		raw     any
		want    any // the decoded value, or nil for an error
		newZero func() any
	}{
		{"duration string", "1m30s", 90 * time.Second, func() any { return new(time.Duration) }},
		{"duration zero int", 0, time.Duration(0), func() any { return new(time.Duration) }},
		{"duration zero string", "0", time.Duration(0), func() any { return new(time.Duration) }},
		{"duration bare number", 10, nil, func() any { return new(time.Duration) }},
		{"duration typed", 3 * time.Second, 3 * time.Second, func() any { return new(time.Duration) }},
		{"int from string", "2048", 2048, func() any { return new(int) }},
		{"int from float", 2048.0, 2048, func() any { return new(int) }},
		{"int from fraction", 1.5, nil, func() any { return new(int) }},
		{"int64 overflow", "99999999999999999999", nil, func() any { return new(int64) }},
		{"float from string", " 0.5", 0.5, func() any { return new(float64) }},
		{"float from int", 10, 10.0, func() any { return new(float64) }},
		{"float from junk", "fast", nil, func() any { return new(float64) }},
		{"float infinite", "+Inf", nil, func() any { return new(float64) }},
		{"string trimmed", " 0.0.0.0:80 ", "0.0.0.0:80", func() any { return new(string) }},
		{"string from map", map[string]any{"a": 1}, nil, func() any { return new(string) }},
		{"bool", true, true, func() any { return new(bool) }},
		{"bool from string", "true", true, func() any { return new(bool) }},
		{"bool from junk", "yes please", nil, func() any { return new(bool) }},
		{"durations", "5s, 30s,2m", "5s,30s,2m0s", func() any { return new([]time.Duration) }},
		{"durations without unit", "5s,30", nil, func() any { return new([]time.Duration) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.newZero()
			err := decode(p, tt.raw)
			if tt.want == nil {
				if err == nil {
					t.Errorf("decoded %v; want an error", reflectValue(p))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := reflectValue(p); got != tt.want {
				t.Errorf("got %v (%T), want %v (%T)", got, got, tt.want, tt.want)
			}
		})
	}
}

func TestConfigReportsEveryBadKeyAtOnceWithSuggestions(t *testing.T) {
	const file = "elections:\n  default_tll: 10s\n  max_ttl: bogus\nlistn: 127.0.0.1:1\nhttp:\n  idle_timeout: 5\nzzz: 1\n"
	_, err := loadFrom(t, file, nil, nil)
	if err == nil {
		t.Fatal("loaded; want an error")
	}
	msg := err.Error()
	for _, want := range []string{
		"5 problems in the configuration:",
		`unknown key "elections.default_tll"; did you mean "elections.default_ttl"?`,
		`unknown key "listn"; did you mean "listen"?`,
		`unknown key "zzz" (configs/elector.yaml lists every key)`,
		`elections.max_ttl: invalid duration "bogus"`,
		"http.idle_timeout: invalid duration 5: give a unit",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if !errors.Is(err, errConfig) {
		t.Errorf("error %v does not wrap errConfig", err)
	}
	// Checks on values that could be read report together too.
	_, err = loadFrom(t, "", nil, []string{"--log-level", "loud", "--log-format", "xml"})
	if err == nil || !strings.Contains(err.Error(), "2 problems") || !strings.Contains(err.Error(), "log.level") || !strings.Contains(err.Error(), "log.format") {
		t.Errorf("two bad values: %v; want both named", err)
	}
}
