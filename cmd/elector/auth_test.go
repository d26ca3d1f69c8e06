package main

import (
	"strings"
	"testing"

	"github.com/electorhq/elector/api"
)

func TestAuthTokensResolveFromHashFileAndEnvironment(t *testing.T) {
	isolate(t)
	secretFile := writeFile(t, "ops-token", "eat_ops_token_from_a_file\n")
	t.Setenv("CI_ELECTOR_TOKEN", "eat_ci_token_from_the_env")
	cfg := writeFile(t, "auth.yaml", `
auth:
  tokens:
    - {name: reader, sha256: `+api.HashAPITokenHex("eat_reader_token_hashed")+`, scopes: [read]}
    - {name: ops, file: `+secretFile+`, scopes: [admin], elections: [billing-*]}
    - {name: ci, env: CI_ELECTOR_TOKEN, scopes: [campaign, read]}
`)
	l, err := load(t, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := l.Config.Auth.apiTokens()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"reader": "eat_reader_token_hashed", "ops": "eat_ops_token_from_a_file", "ci": "eat_ci_token_from_the_env"}
	for _, tok := range toks {
		if tok.SHA256 != api.HashAPIToken(want[tok.Name]) {
			t.Errorf("token %s has the wrong hash", tok.Name)
		}
	}
	if len(toks) != 3 || toks[0].Elections[0] != "*" || toks[1].Elections[0] != "billing-*" {
		t.Fatalf("tokens %+v", toks)
	}
}

func TestAuthTokensAreRefusedNamingTheKey(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"bad scope", `{name: a, sha256: ` + api.HashAPITokenHex("x") + `, scopes: [root]}`, `scope "root"`},
		{"two sources", `{name: a, sha256: ` + api.HashAPITokenHex("x") + `, env: HOME, scopes: [read]}`, "exactly one"},
		{"short hash", `{name: a, sha256: abc, scopes: [read]}`, "64 hex digits"},
		{"unset env", `{name: a, env: ELECTOR_TEST_UNSET_TOKEN_VAR, scopes: [read]}`, "missing"},
		{"bad pattern", `{name: a, sha256: ` + api.HashAPITokenHex("x") + `, scopes: [read], elections: ["["]}`, "pattern"},
		{"unknown member", `{name: a, secret: x, scopes: [read]}`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			cfg := writeFile(t, "auth.yaml", "auth:\n  tokens:\n    - "+tt.yaml+"\n")
			_, err := load(t, "--config", cfg)
			if err == nil || !strings.Contains(err.Error(), "auth.tokens") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want auth.tokens and %q", err, tt.want)
			}
		})
	}
}
