package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
)

// Scope is what an API token may do.
type Scope string

// The scopes of API tokens. They are independent: a token lists every scope
// it needs (a sidecar usually has read and campaign).
const (
	// ScopeRead reads elections, leaders, candidates and event streams.
	ScopeRead Scope = "read"
	// ScopeCampaign campaigns, heartbeats, resigns and reports errors.
	ScopeCampaign Scope = "campaign"
	// ScopeAdmin changes settings and manages subscriptions and redelivery.
	ScopeAdmin Scope = "admin"
	// scopeOpen marks a route anybody may call.
	scopeOpen Scope = ""
)

// Scopes lists the scopes a token may be given.
func Scopes() []Scope { return []Scope{ScopeRead, ScopeCampaign, ScopeAdmin} }

// Token is one API token as the gateway knows it: never the token itself,
// only its SHA-256.
type Token struct {
	// Name identifies the token in logs and 403 details; never the secret.
	Name string
	// SHA256 is the SHA-256 of the token (HashAPIToken).
	SHA256 [sha256.Size]byte
	// Scopes the token grants.
	Scopes []Scope
	// Elections are path.Match patterns ("billing-*") of the elections the
	// token may act on; empty means none. "*" covers every election, which
	// routes spanning all elections (GET /v1/elections, /v1/events) need.
	Elections []string
}

// HashAPIToken returns the SHA-256 of an API token, the form in which the
// configuration holds tokens (hex-encoded).
func HashAPIToken(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// HashAPITokenHex is HashAPIToken, hex-encoded.
func HashAPITokenHex(token string) string {
	h := HashAPIToken(token)
	return hex.EncodeToString(h[:])
}

// ValidElectionPattern reports whether p is a usable election pattern.
func ValidElectionPattern(p string) bool {
	_, err := path.Match(p, "")
	return p != "" && err == nil
}

// covers reports whether the token may act on election; "" stands for
// every election at once, which only "*" covers.
func (t *Token) covers(election string) bool {
	for _, p := range t.Elections {
		if p == "*" {
			return true
		}
		if election != "" {
			if ok, _ := path.Match(p, election); ok {
				return true
			}
		}
	}
	return false
}

// Pseudo-scopes of the routing table (routes), which scopeOf resolves.
const (
	// scopeOperational marks an operational route (/metrics, /docs,
	// /openapi.*): open, or behind ScopeRead with
	// Config.ProtectOperational. The probes are not operational: they stay
	// open, since orchestrators call them without credentials.
	scopeOperational Scope = "(operational)"
	// scopeAdminOrLeader needs ScopeAdmin, or ScopeCampaign from a request
	// that carries a candidate token (Elector-Candidate-Token): a leader
	// asks for its own transfer with the campaign scope, and the gateway
	// then checks that the token is the leader's.
	scopeAdminOrLeader Scope = "(admin or leader)"
)

// scopeOf is the scope the route rt needs under cfg from a request without
// a candidate token.
func scopeOf(cfg Config, rt route) Scope {
	switch rt.scope {
	case scopeOperational:
		if cfg.ProtectOperational {
			return ScopeRead
		}
		return scopeOpen
	case scopeAdminOrLeader:
		return ScopeAdmin
	}
	return rt.scope
}

// candidateScopeOf is the scope the route rt needs from a request that
// carries a candidate token, if another than scopeOf's; "" if none.
func candidateScopeOf(rt route) Scope {
	if rt.scope == scopeAdminOrLeader {
		return ScopeCampaign
	}
	return ""
}

// authenticate wraps the handler of one route: with API tokens configured,
// a route that needs a scope answers 401 unauthenticated without a known
// bearer token and 403 forbidden when the token lacks the scope or does not
// cover the election. Candidate tokens are checked by the handlers as
// before: both checks apply.
func (a *api) authenticate(rt route, next http.Handler) http.Handler {
	method, pattern := rt.method, rt.pattern
	scope := scopeOf(a.cfg, rt)
	if len(a.cfg.Tokens) == 0 || scope == scopeOpen {
		return next
	}
	routeScope, byCandidate := scope, candidateScopeOf(rt)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scope := routeScope
		if byCandidate != "" && r.Header.Get(TokenHeader) != "" {
			scope = byCandidate
		}
		given, ok := bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="elector"`)
			a.writeError(w, r, errorf("unauthenticated", "this route needs an API token with scope %q: send it as Authorization: Bearer <token>", scope))
			return
		}
		tok := a.findToken(given)
		if tok == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="elector", error="invalid_token"`)
			a.writeError(w, r, errorf("unauthenticated", "the API token is not known to this gateway"))
			return
		}
		election := chi.URLParam(r, "election")
		if !slices.Contains(tok.Scopes, scope) {
			a.writeError(w, r, forbidden(scope, election,
				fmt.Sprintf("API token %q lacks scope %q, which %s %s needs", tok.Name, scope, method, pattern)))
			return
		}
		// A session's own routes act on no election: its campaigns are
		// checked against theirs.
		if !strings.HasPrefix(pattern, "/v1/sessions") && !tok.covers(election) {
			what := fmt.Sprintf("election %q", election)
			if election == "" {
				what = "every election (the route spans them all; it needs the pattern \"*\")"
			}
			a.writeError(w, r, forbidden(scope, election,
				fmt.Sprintf("API token %q may not act on %s; it covers %s", tok.Name, what, strings.Join(tok.Elections, ", "))))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// forbidden is the 403 problem with the scope and election as members.
func forbidden(scope Scope, election, detail string) error {
	e := errorf("forbidden", "%s", detail)
	e.ext = map[string]any{"scope": string(scope)}
	if election != "" {
		e.ext["election"] = election
	}
	return e
}

// bearer returns the token of an Authorization: Bearer header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// findToken returns the configured token whose hash is given's, or nil.
// It compares with every token in constant time, so that timing tells
// nothing about how close a guess was or which token matched.
func (a *api) findToken(given string) *Token {
	h := HashAPIToken(given)
	var found *Token
	for i := range a.cfg.Tokens {
		if subtle.ConstantTimeCompare(h[:], a.cfg.Tokens[i].SHA256[:]) == 1 {
			found = &a.cfg.Tokens[i]
		}
	}
	return found
}
