package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/electorhq/elector/api"
)

// AuthConfig configures API tokens. With no token, the API needs none.
type AuthConfig struct {
	// Tokens are the API tokens. Key auth.tokens, default none (no
	// authentication). In the environment or on the command line, a JSON
	// array of the same objects.
	Tokens []TokenConfig
}

// TokenConfig is one API token. Exactly one of SHA256, File and Env gives
// the token: the plaintext never has to be in the config file.
type TokenConfig struct {
	// Name identifies the token in 403 problems and logs.
	Name string `json:"name"`
	// SHA256 is the hex SHA-256 of the token (elector token hash prints it).
	SHA256 string `json:"sha256"`
	// File holds the token itself, as a mounted secret does.
	File string `json:"file"`
	// Env names an environment variable that holds the token.
	Env string `json:"env"`
	// Scopes: read, campaign, admin.
	Scopes []string `json:"scopes"`
	// Elections are name patterns ("billing-*"); default ["*"].
	Elections []string `json:"elections"`
}

// apiTokens resolves the configured tokens into their hashes, reading files
// and the environment. Errors name the token at fault, never its value.
func (a AuthConfig) apiTokens() ([]api.Token, error) {
	var out []api.Token
	names := map[string]bool{}
	for i, t := range a.Tokens {
		what := fmt.Sprintf("token %d", i+1)
		if t.Name == "" {
			return nil, fmt.Errorf("%s: a name is required", what)
		}
		what = fmt.Sprintf("token %q", t.Name)
		if names[t.Name] {
			return nil, fmt.Errorf("%s: the name is used twice", what)
		}
		names[t.Name] = true
		tok := api.Token{Name: t.Name}
		switch n := countSet(t.SHA256, t.File, t.Env); {
		case n != 1:
			return nil, fmt.Errorf("%s: give exactly one of sha256, file, env (got %d)", what, n)
		case t.SHA256 != "":
			b, err := hex.DecodeString(strings.TrimSpace(t.SHA256))
			if err != nil || len(b) != len(tok.SHA256) {
				return nil, fmt.Errorf("%s: sha256 must be 64 hex digits (elector token hash prints them)", what)
			}
			copy(tok.SHA256[:], b)
		case t.File != "":
			b, err := os.ReadFile(t.File)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			if err := setPlain(&tok, string(b)); err != nil {
				return nil, fmt.Errorf("%s: file %s: %w", what, t.File, err)
			}
		default:
			if err := setPlain(&tok, os.Getenv(t.Env)); err != nil {
				return nil, fmt.Errorf("%s: environment variable %s: %w", what, t.Env, err)
			}
		}
		if len(t.Scopes) == 0 {
			return nil, fmt.Errorf("%s: scopes are required (read, campaign, admin)", what)
		}
		for _, s := range t.Scopes {
			if !slices.Contains(api.Scopes(), api.Scope(s)) {
				return nil, fmt.Errorf("%s: scope %q is not one of read, campaign, admin", what, s)
			}
			tok.Scopes = append(tok.Scopes, api.Scope(s))
		}
		tok.Elections = slices.Clone(t.Elections)
		if len(tok.Elections) == 0 {
			tok.Elections = []string{"*"}
		}
		for _, p := range tok.Elections {
			if !api.ValidElectionPattern(p) {
				return nil, fmt.Errorf("%s: election pattern %q is not valid (use names and *, such as billing-*)", what, p)
			}
		}
		out = append(out, tok)
	}
	return out, nil
}

// setPlain hashes a plaintext token read from a file or the environment.
func setPlain(tok *api.Token, plain string) error {
	plain = strings.TrimSpace(plain)
	if len(plain) < 16 {
		return errors.New("the token is missing or shorter than 16 characters")
	}
	tok.SHA256 = api.HashAPIToken(plain)
	return nil
}

func countSet(vs ...string) int {
	n := 0
	for _, v := range vs {
		if v != "" {
			n++
		}
	}
	return n
}

// decodeTokens stores auth.tokens: a list of maps (a config file) or a JSON
// array (environment, flag); "" means none.
func decodeTokens(p *[]TokenConfig, raw any) error {
	var b []byte
	switch r := raw.(type) {
	case string:
		if strings.TrimSpace(r) == "" {
			*p = nil
			return nil
		}
		b = []byte(r)
	case []any:
		if len(r) == 0 {
			*p = nil
			return nil
		}
		j, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("invalid token list: %v", err)
		}
		b = j
	default:
		// The value is not quoted back: a mistyped entry may hold a token.
		return fmt.Errorf("invalid token list (a %T): use a list of {name, sha256|file|env, scopes, elections}", raw)
	}
	var ts []TokenConfig
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ts); err != nil {
		return fmt.Errorf("invalid token list: %v (each token has name, one of sha256, file or env, scopes and elections)", err)
	}
	*p = ts
	return nil
}
