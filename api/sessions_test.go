package api

import (
	"net/http"
	"strings"
	"testing"
)

func sessionToken(tok string) header { return header{SessionTokenHeader, tok} }

// TestWalkthroughSession is a session's life over HTTP: opened, campaigned
// in from two elections, heartbeated, closed; every answer is checked
// against openapi.yaml.
func TestWalkthroughSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})

	r := e.do("POST", "/v1/sessions", `{"ttl":"30s"}`).expect(t, http.StatusCreated)
	s := r.json(t)
	id, tok := s["id"].(string), s["token"].(string)
	if r.Header.Get("Location") != "/v1/sessions/"+id || s["ttl"] != "30s" || len(s["candidates"].([]any)) != 0 || !strings.HasPrefix(tok, "ecs_"+id+".") {
		t.Fatalf("opened session: %s (Location %q)", r.Body, r.Header.Get("Location"))
	}

	for _, el := range []string{"orders", "billing"} {
		c := e.do("POST", "/v1/elections/"+el+"/candidates", `{"id":"node-a","session":"`+id+`"}`, sessionToken(tok)).expect(t, http.StatusCreated).json(t)
		if c["state"] != "leader" || c["token"] != tok || c["ttl"] != "30s" {
			t.Fatalf("campaign in the session into %s: %v; want leader, the session's token and TTL", el, c)
		}
	}
	// The candidacy's own calls take the session's token.
	e.do("PUT", "/v1/elections/orders/candidates/node-a/heartbeat", nil, token(tok)).expect(t, http.StatusOK)

	k := e.do("PUT", "/v1/sessions/"+id+"/heartbeat", nil, sessionToken(tok)).expect(t, http.StatusOK).json(t)
	cs := k["candidates"].([]any)
	if len(cs) != 2 || cs[0].(map[string]any)["election"] != "billing" || cs[1].(map[string]any)["election"] != "orders" {
		t.Fatalf("session heartbeat: %v; want both candidacies, by election", k)
	}
	for _, c := range cs {
		if c := c.(map[string]any); c["state"] != "leader" || c["term"] != 1.0 {
			t.Fatalf("session heartbeat's entry %v: want it leading with term 1", c)
		}
	}
	if _, ok := k["token"]; ok {
		t.Error("a session heartbeat must not echo the token")
	}

	e.do("DELETE", "/v1/sessions/"+id, nil, sessionToken(tok)).expect(t, http.StatusNoContent)
	for _, el := range []string{"orders", "billing"} {
		e.do("GET", "/v1/elections/"+el+"/candidates/node-a", nil).expect(t, http.StatusNotFound)
	}
	if p := e.do("PUT", "/v1/sessions/"+id+"/heartbeat", nil, sessionToken(tok)).expect(t, http.StatusNotFound).problemType(t); p != "session-not-found" {
		t.Fatalf("heartbeat of a closed session: %s", p)
	}
}

// TestSessionRefusals: each wrong use of a session gets its problem.
func TestSessionRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	s := e.do("POST", "/v1/sessions", nil).expect(t, http.StatusCreated).json(t)
	id, tok := s["id"].(string), s["token"].(string)
	if s["ttl"] != "10s" {
		t.Errorf("a session opened without a body: TTL %v, want the default 10s", s["ttl"])
	}
	other := e.do("POST", "/v1/sessions", `{}`).expect(t, http.StatusCreated).json(t)
	e.do("POST", "/v1/elections/jobs/candidates", `{"id":"node-a","session":"`+id+`"}`, sessionToken(tok)).expect(t, http.StatusCreated)
	unknown := "ses_" + strings.Repeat("a", 24)

	for _, c := range []struct {
		name, method, path, body string
		headers                  []header
		status                   int
		problem, field           string
	}{
		{"heartbeat without a token", "PUT", "/v1/sessions/" + id + "/heartbeat", "", nil, 400, "session-token-missing", ""},
		{"heartbeat with another's token", "PUT", "/v1/sessions/" + id + "/heartbeat", "", []header{sessionToken(other["token"].(string))}, 403, "session-token-mismatch", ""},
		{"close with another's token", "DELETE", "/v1/sessions/" + id, "", []header{sessionToken(other["token"].(string))}, 403, "session-token-mismatch", ""},
		{"heartbeat of an unknown session", "PUT", "/v1/sessions/" + unknown + "/heartbeat", "", []header{sessionToken("ecs_" + unknown + ".x")}, 404, "session-not-found", ""},
		{"a malformed session id", "PUT", "/v1/sessions/ses_nope/heartbeat", "", []header{sessionToken(tok)}, 400, "invalid-request", "session"},
		{"a TTL out of bounds", "POST", "/v1/sessions", `{"ttl":"2h"}`, nil, 400, "invalid-request", "ttl"},
		{"a campaign without the session's token", "POST", "/v1/elections/jobs/candidates", `{"id":"node-b","session":"` + id + `"}`, nil, 400, "session-token-missing", ""},
		{"a campaign with another's token", "POST", "/v1/elections/jobs/candidates", `{"id":"node-b","session":"` + id + `"}`, []header{sessionToken(other["token"].(string))}, 403, "session-token-mismatch", ""},
		{"a campaign in a session with a TTL", "POST", "/v1/elections/jobs/candidates", `{"id":"node-b","ttl":"5s","session":"` + id + `"}`, []header{sessionToken(tok)}, 400, "invalid-request", "ttl"},
		{"a campaign with a malformed session", "POST", "/v1/elections/jobs/candidates", `{"id":"node-b","session":"x"}`, []header{sessionToken(tok)}, 400, "invalid-request", "session"},
		{"a second candidacy in one election", "POST", "/v1/elections/jobs/candidates", `{"id":"node-b","session":"` + id + `"}`, []header{sessionToken(tok)}, 409, "session-in-election", ""},
		{"a campaign in an unknown session", "POST", "/v1/elections/jobs/candidates", `{"id":"node-c","session":"` + unknown + `"}`, []header{sessionToken("ecs_" + unknown + ".x")}, 404, "session-not-found", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.body != "" {
				body = c.body
			}
			r := e.do(c.method, c.path, body, c.headers...).expect(t, c.status)
			if got := r.problemType(t); got != c.problem {
				t.Fatalf("problem %s, want %s: %s", got, c.problem, r.Body)
			}
			if f, _ := r.json(t)["field"].(string); f != c.field {
				t.Fatalf("field %q, want %q: %s", f, c.field, r.Body)
			}
		})
	}
	// None of it touched the session's candidacy.
	k := e.do("PUT", "/v1/sessions/"+id+"/heartbeat", nil, sessionToken(tok)).expect(t, http.StatusOK).json(t)
	if cs := k["candidates"].([]any); len(cs) != 1 || cs[0].(map[string]any)["id"] != "node-a" {
		t.Fatalf("session after the refusals: %v", k)
	}
}
