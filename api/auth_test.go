package api

import (
	"net/http"
	"strings"
	"testing"
)

// Plain API tokens of the auth tests; the gateway only knows their hashes.
const (
	readAllToken        = "eat_read_all_9f1c2b"
	campaignBillingTok  = "eat_campaign_billing_77a0"
	adminAllToken       = "eat_admin_all_c3d4e5"
	readBillingOnlyTok  = "eat_read_billing_only_0b1"
	unknownToken        = "eat_not_configured_4242"
	routeTestElection   = "billing-a"
	otherTestElection   = "payroll"
	authTestCandidateID = "node-a"
)

func authTokens() []Token {
	return []Token{
		{Name: "reader", SHA256: HashAPIToken(readAllToken), Scopes: []Scope{ScopeRead}, Elections: []string{"*"}},
		{Name: "billing-sidecar", SHA256: HashAPIToken(campaignBillingTok), Scopes: []Scope{ScopeCampaign}, Elections: []string{"billing-*"}},
		{Name: "ops", SHA256: HashAPIToken(adminAllToken), Scopes: []Scope{ScopeAdmin}, Elections: []string{"*"}},
		{Name: "billing-dashboard", SHA256: HashAPIToken(readBillingOnlyTok), Scopes: []Scope{ScopeRead}, Elections: []string{"billing-*"}},
	}
}

// tokenWith returns a configured token granting scope on every election.
func tokenWith(scope Scope) string {
	switch scope {
	case ScopeRead:
		return readAllToken
	case ScopeCampaign:
		return campaignBillingTok
	default:
		return adminAllToken
	}
}

// fillPattern turns a route pattern into a concrete path.
func fillPattern(pattern, election string) string {
	return strings.NewReplacer("{election}", election, "{id}", authTestCandidateID,
		"{sub}", "sub_x", "{delivery}", "d_1", "{asset}", "swagger-ui.css").Replace(pattern)
}

func bearerHeader(tok string) header { return header{"Authorization", "Bearer " + tok} }

// TestEachScopeIsAllowedAndRefusedWhereItShouldBe walks the routing table:
// every route that needs a scope refuses no token and an unknown one (401),
// a token without its scope and one whose patterns miss the election
// (403), and lets a token with the scope through to its handler.
func TestEachScopeIsAllowedAndRefusedWhereItShouldBe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Tokens: authTokens()})
	for _, rt := range (&api{}).routes() {
		op := rt.method + " " + rt.pattern
		if op == "GET /metrics" {
			continue // served and specified by the metrics package
		}
		if rt.pattern == "/" {
			continue // a redirect to /docs, which the client follows (TestRootLeadsToDocsAndHeadDocsWorks)
		}
		scope := scopeOf(Config{}, rt)
		path := fillPattern(rt.pattern, routeTestElection)
		var body any
		if isWrite(rt.method) {
			body = map[string]any{}
		}
		stream := rt.stream
		t.Run(op, func(t *testing.T) {
			e := &env{t: t, srv: e.srv, gw: e.gw, log: e.log}
			if scope == scopeOpen {
				if r := e.do(rt.method, path, body); r.Status == 401 || r.Status == 403 {
					t.Fatalf("open route answered %d without a token", r.Status)
				}
				return
			}
			for _, tok := range []string{"", unknownToken} {
				var hs []header
				if tok != "" {
					hs = append(hs, bearerHeader(tok))
				}
				r := e.do(rt.method, path, body, hs...).expect(t, http.StatusUnauthorized)
				if p := r.problemType(t); p != "unauthenticated" {
					t.Fatalf("problem %s, want unauthenticated", p)
				}
				if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Fatalf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
				}
			}
			for _, other := range Scopes() {
				if other == scope {
					continue
				}
				r := e.do(rt.method, path, body, bearerHeader(tokenWith(other))).expect(t, http.StatusForbidden)
				m := r.json(t)
				if m["type"] != ProblemTypePrefix+"forbidden" || m["scope"] != string(scope) {
					t.Fatalf("token with %s: %s", other, r.Body)
				}
			}
			// The right scope on an election the token does not cover.
			if strings.Contains(rt.pattern, "{election}") {
				if scope == ScopeCampaign {
					r := e.do(rt.method, fillPattern(rt.pattern, otherTestElection), body, bearerHeader(tokenWith(scope)))
					r.expect(t, http.StatusForbidden)
					if m := r.json(t); m["election"] != otherTestElection {
						t.Fatalf("forbidden does not name the election: %s", r.Body)
					}
				} else if !stream {
					if r := e.do(rt.method, fillPattern(rt.pattern, otherTestElection), body, bearerHeader(tokenWith(scope))); r.Status == 401 || r.Status == 403 {
						t.Fatalf("token covering every election refused: %s", r.Body)
					}
				}
			} else if scope == ScopeRead {
				// Routes spanning every election need the pattern "*".
				e.do(rt.method, path, body, bearerHeader(readBillingOnlyTok)).expect(t, http.StatusForbidden)
			}
			if stream {
				s := e.stream(path, bearerHeader(tokenWith(scope)))
				s.close()
				return
			}
			r := e.do(rt.method, path, body, bearerHeader(tokenWith(scope)))
			if r.Status == 401 || r.Status == 403 && r.problemType(t) == "forbidden" {
				t.Fatalf("token with scope %s refused: %s", scope, r.Body)
			}
		})
	}
}

// TestCandidateTokenStillGuardsHeartbeatAndResign: an API token with the
// campaign scope does not let a caller resign somebody else's candidate.
func TestCandidateTokenStillGuardsHeartbeatAndResign(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Tokens: authTokens()})
	auth := bearerHeader(campaignBillingTok)
	r := e.do("POST", "/v1/elections/billing-a/candidates", map[string]any{"id": "node-a", "ttl": "30s"}, auth).expect(t, http.StatusCreated)
	tok := r.json(t)["token"].(string)
	base := "/v1/elections/billing-a/candidates/node-a"
	if p := e.do("PUT", base+"/heartbeat", nil, auth, token("ect_wrong")).expect(t, http.StatusForbidden).problemType(t); p != "candidate-token-mismatch" {
		t.Fatalf("heartbeat with a wrong candidate token: %s", p)
	}
	e.do("PUT", base+"/heartbeat", nil, token(tok)).expect(t, http.StatusUnauthorized)
	e.do("PUT", base+"/heartbeat", nil, auth, token(tok)).expect(t, http.StatusOK)
	e.do("DELETE", base, nil, auth, token(tok)).expect(t, http.StatusNoContent)
}

// TestProtectOperationalPutsDocsBehindRead: docs and the spec need the read
// scope when configured so; the probes never do.
func TestProtectOperationalPutsDocsBehindRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Tokens: authTokens(), ProtectOperational: true})
	e.do("GET", "/openapi.yaml", nil).expect(t, http.StatusUnauthorized)
	e.do("GET", "/openapi.yaml", nil, bearerHeader(readAllToken)).expect(t, http.StatusOK)
	e.do("GET", "/healthz", nil).expect(t, http.StatusOK)
	e.do("GET", "/readyz", nil).expect(t, http.StatusOK)
}

// TestNoSecretIsLogged runs a scripted session with debug logs — API
// tokens good and bad, candidate tokens, webhook secrets — and greps the
// log for every secret it used.
func TestNoSecretIsLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Tokens: authTokens(), LogRequests: true})
	admin, camp := bearerHeader(adminAllToken), bearerHeader(campaignBillingTok)
	secrets := []string{adminAllToken, campaignBillingTok, readAllToken, unknownToken}

	r := e.do("POST", "/v1/elections/billing-a/candidates", map[string]any{
		"id": "node-a", "ttl": "30s", "webhook": map[string]any{"url": "http://127.0.0.1:9/hook"},
	}, camp).expect(t, http.StatusCreated)
	m := r.json(t)
	tok := m["token"].(string)
	secrets = append(secrets, tok)
	if s, ok := m["webhook_secret"].(string); ok {
		secrets = append(secrets, s)
	}
	e.do("PUT", "/v1/elections/billing-a/candidates/node-a/heartbeat", nil, camp, token(tok)).expect(t, http.StatusOK)
	e.do("PUT", "/v1/elections/billing-a/candidates/node-a/heartbeat", nil, camp, token(tok+"x")).expect(t, http.StatusForbidden)
	e.do("POST", "/v1/elections/billing-a/candidates/node-a/error", map[string]any{"reason": "begin failed"}, camp, token(tok)).expect(t, http.StatusOK)
	e.do("GET", "/v1/elections/billing-a", nil, bearerHeader(unknownToken)).expect(t, http.StatusUnauthorized)
	e.do("GET", "/v1/elections/billing-a", nil, bearerHeader(readAllToken)).expect(t, http.StatusOK)

	sub := e.do("POST", "/v1/elections/billing-a/subscriptions", map[string]any{"url": "http://127.0.0.1:9/sub"}, admin).expect(t, http.StatusCreated).json(t)
	secrets = append(secrets, sub["secret"].(string))
	rot := e.do("POST", "/v1/elections/billing-a/subscriptions/"+sub["id"].(string)+"/rotate-secret", nil, admin).expect(t, http.StatusOK).json(t)
	secrets = append(secrets, rot["secret"].(string))
	e.do("DELETE", "/v1/elections/billing-a/candidates/node-a", nil, camp, token(tok)).expect(t, http.StatusNoContent)

	logs := e.log.String()
	if !strings.Contains(logs, `"request_id"`) {
		t.Fatalf("no request lines logged:\n%s", logs)
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the log holds the secret %.8s…:\n%s", s, logs)
		}
	}
}
