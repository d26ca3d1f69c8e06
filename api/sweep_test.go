package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// sweepCase is one bad request of the sweep.
type sweepCase struct {
	name    string
	path    string
	body    []byte // nil: none
	headers http.Header
	// field is the input a 400 invalid-request must name; "" for any.
	field string
}

// sweepFixture is what the sweep's requests refer to.
type sweepFixture struct {
	election, id, token, sub string
	session, sessionToken    string
}

// oddSegments are path segments no name or id may be; some decode to
// something else (%2F to a slash), some are not UTF-8, one is too long.
var oddSegments = []string{
	"%20", "a%2Fb", "..", "%2E%2E", "%00", "%C3%28", "%E2%80%AE", "%25", "a%3Bb",
	"%F0%9F%92%A5", "-lead", "a%0Ab", strings.Repeat("x", 300),
}

// TestSweepEveryOperationWithBadInput drives every operation of
// openapi.yaml with odd path segments, bad headers and, where it takes a
// body, malformed bodies and members of the wrong type. Every answer must
// be a 4xx problem that matches the spec, naming the field where there is
// one; none may be a 5xx; and no request may change anything.
func TestSweepEveryOperationWithBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Tokens: authTokens(), MaxBodyBytes: 4 << 10})
	doc, err := spec()
	if err != nil {
		t.Fatal(err)
	}
	fx := sweepFixture{election: "billing-sweep", id: "node-a"}
	admin, camp := bearerHeader(adminAllToken), bearerHeader(campaignBillingTok)
	r := e.do("POST", "/v1/elections/"+fx.election+"/candidates", map[string]any{"id": fx.id, "ttl": "1h"}, camp).expect(t, http.StatusCreated)
	fx.token = r.json(t)["token"].(string)
	e.do("POST", "/v1/elections/"+fx.election+"/candidates", map[string]any{"id": "node-b", "ttl": "1h"}, camp).expect(t, http.StatusCreated)
	r = e.do("POST", "/v1/elections/"+fx.election+"/subscriptions", map[string]any{"url": "https://example.com/hook"}, admin).expect(t, http.StatusCreated)
	fx.sub = r.json(t)["id"].(string)
	r = e.do("POST", "/v1/sessions", map[string]any{"ttl": "1h"}, camp).expect(t, http.StatusCreated)
	fx.session, fx.sessionToken = r.json(t)["id"].(string), r.json(t)["token"].(string)

	read := bearerHeader(readAllToken)
	state := func() string {
		var b strings.Builder
		for _, p := range []string{"/v1/elections", "/v1/elections/" + fx.election + "/candidates"} {
			b.Write(e.do("GET", p, nil, read).expect(t, http.StatusOK).Body)
		}
		b.Write(e.do("GET", "/v1/elections/"+fx.election+"/subscriptions", nil, admin).expect(t, http.StatusOK).Body)
		return b.String()
	}
	before := state()

	var ops, sent int
	for _, path := range slices.Sorted(maps.Keys(doc.Paths.Map())) {
		for method, op := range doc.Paths.Value(path).Operations() {
			ops++
			t.Run(method+" "+path, func(t *testing.T) {
				for _, c := range sweepCases(t, doc, method, path, op, fx) {
					sent++
					res := sweepSend(t, e, method, c)
					checkSweepAnswer(t, c, res)
					if after := state(); after != before {
						// Later cases would be judged against a changed state.
						t.Fatalf("%s changed the state:\nbefore %s\nafter  %s", c.name, before, after)
					}
				}
			})
			if t.Failed() {
				return
			}
		}
	}
	t.Logf("%d bad requests to %d operations", sent, ops)
	if ops < len((&api{}).routes()) {
		t.Fatalf("swept %d operations, the router has %d routes", ops, len((&api{}).routes()))
	}
}

// sweepCases builds the bad requests for one operation.
func sweepCases(t *testing.T, doc *openapi3.T, method, path string, op *openapi3.Operation, fx sweepFixture) []sweepCase {
	t.Helper()
	valid := map[string]string{"election": fx.election, "id": fx.id, "sub": fx.sub, "delivery": "dlv_none", "asset": "swagger-ui.css", "session": fx.session}
	params := regexp.MustCompile(`\{(\w+)\}`).FindAllStringSubmatch(path, -1)
	fill := func(odd, with string) string {
		p := path
		for _, m := range params {
			v := valid[m[1]]
			if m[1] == odd {
				v = with
			}
			p = strings.ReplaceAll(p, m[0], v)
		}
		return p
	}
	// good are the headers that a valid request would carry.
	scope := tableScope(t, method, path)
	good := http.Header{}
	if scope != scopeOpen {
		good.Set("Authorization", "Bearer "+tokenWith(scope))
	}
	needsToken, needsSession := false, false
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.In == "header" && p.Value.Name == TokenHeader {
			needsToken = true
			good.Set(TokenHeader, fx.token)
		}
		if p.Value != nil && p.Value.In == "header" && p.Value.Name == SessionTokenHeader && p.Value.Required {
			needsSession = true
			good.Set(SessionTokenHeader, fx.sessionToken)
		}
	}
	with := func(h http.Header, kv ...string) http.Header {
		h = h.Clone()
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				h.Del(kv[i])
			} else {
				h.Set(kv[i], kv[i+1])
			}
		}
		return h
	}
	var body []byte
	mediaType := ""
	var schema *openapi3.Schema
	if op.RequestBody != nil {
		for _, mt := range []string{"application/json", "application/merge-patch+json"} {
			if c := op.RequestBody.Value.Content.Get(mt); c != nil {
				mediaType, schema = mt, c.Schema.Value
				break
			}
		}
		body = sweepValidBody(t, path)
		good.Set("Content-Type", mediaType)
	}
	stream := strings.HasSuffix(path, "/events")

	var cases []sweepCase
	// Odd path segments, one parameter at a time.
	for _, m := range params {
		for _, odd := range oddSegments {
			field := ""
			if m[1] == "election" || m[1] == "id" || m[1] == "session" {
				field = m[1]
			}
			cases = append(cases, sweepCase{name: "odd " + m[1] + " " + clip(odd), path: fill(m[1], odd), body: body, headers: good, field: field})
		}
	}
	here := fill("", "")
	// Bad headers.
	if scope != scopeOpen {
		for _, auth := range []string{"", "Bearer ", "Bearer eat_nonsense", "Basic Zm9vOmJhcg==", "Bearer " + strings.Repeat("t", 4096)} {
			cases = append(cases, sweepCase{name: "authorization " + clip(auth), path: here, body: body, headers: with(good, "Authorization", auth)})
		}
		wrong := readAllToken
		if scope == ScopeRead {
			wrong = campaignBillingTok
		}
		cases = append(cases, sweepCase{name: "token of another scope", path: here, body: body, headers: with(good, "Authorization", "Bearer "+wrong)})
	}
	if needsToken {
		for _, tok := range []string{"", "ect_wrong", strings.Repeat("e", 8<<10), "ect_\t"} {
			cases = append(cases, sweepCase{name: "candidate token " + clip(tok), path: here, body: body, headers: with(good, TokenHeader, tok)})
		}
	}
	if needsSession {
		for _, tok := range []string{"", "ecs_wrong", "ecs_" + fx.session + ".wrong", strings.Repeat("e", 8<<10), "ecs_\t"} {
			cases = append(cases, sweepCase{name: "session token " + clip(tok), path: here, body: body, headers: with(good, SessionTokenHeader, tok)})
		}
	}
	if op.RequestBody != nil {
		for _, ct := range []string{"text/plain", "application/json; charset=\"", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
			cases = append(cases, sweepCase{name: "content type " + ct, path: here, body: body, headers: with(good, "Content-Type", ct)})
		}
	}
	if stream || op.RequestBody == nil {
		return cases
	}
	// Malformed bodies.
	malformed := []string{`{`, `[]`, `[` + string(body) + `]`, `null`, `"x"`, `7`, string(body) + `{}`, "\xff\xfe", `{"a":}`, `{'a':1}`,
		`{"zz_unknown":1}`, strings.Repeat(`{"a":`, 5000), `{"x":"` + strings.Repeat("x", 5<<10) + `"}`}
	if op.RequestBody.Value.Required {
		malformed = append(malformed, "", "  \n")
	}
	for _, m := range malformed {
		field := ""
		if m == `{"zz_unknown":1}` {
			field = "zz_unknown"
		}
		cases = append(cases, sweepCase{name: "body " + clip(m), path: here, body: []byte(m), headers: good, field: field})
	}
	// Members of the wrong type, of invalid UTF-8, and an unknown one,
	// each in an otherwise valid body.
	var base map[string]any
	if err := json.Unmarshal(body, &base); err != nil {
		t.Fatal(err)
	}
	for name, prop := range schema.Properties {
		for _, wrong := range wrongValues(prop.Value) {
			cases = append(cases, sweepCase{name: "member " + name + " " + string(mustJSON(t, wrong)), path: here,
				body: mustJSON(t, withMember(base, name, wrong)), headers: good, field: name})
		}
		if p := prop.Value; p.Type.Includes("string") {
			cases = append(cases, sweepCase{name: "member " + name + " not UTF-8", path: here,
				body: bytes.Replace(mustJSON(t, withMember(base, name, "\uE000")), []byte("\uE000"), []byte("\xff"), 1), headers: good, field: name})
		}
		if inner, ok := base[name].(map[string]any); ok {
			for sub, sp := range prop.Value.Properties {
				for _, wrong := range wrongValues(sp.Value) {
					cases = append(cases, sweepCase{name: "member " + name + "." + sub + " " + string(mustJSON(t, wrong)), path: here,
						body: mustJSON(t, withMember(base, name, withMember(inner, sub, wrong))), headers: good, field: name + "." + sub})
				}
			}
			if closed := prop.Value.AdditionalProperties.Has; closed != nil && !*closed {
				cases = append(cases, sweepCase{name: "member " + name + ".zz_unknown", path: here,
					body: mustJSON(t, withMember(base, name, withMember(inner, "zz_unknown", 1))), headers: good, field: name + ".zz_unknown"})
			}
		}
	}
	return cases
}

// sweepValidBody is a body the operation at path would accept; the sweep
// only ever sends it spoilt.
func sweepValidBody(t *testing.T, path string) []byte {
	t.Helper()
	switch {
	case strings.HasSuffix(path, "/candidates"):
		return []byte(`{"id":"node-z","ttl":"10s","metadata":{"addr":"10.0.0.9:80"},"webhook":{"url":"https://example.com/own","begin_timeout":"5s"}}`)
	case strings.HasSuffix(path, "/transfer"):
		return []byte(`{"to":"node-z"}`)
	case path == "/v1/sessions":
		return []byte(`{"ttl":"10s"}`)
	case strings.HasSuffix(path, "/error"):
		return []byte(`{"reason":"begin hook exited 1"}`)
	case strings.HasSuffix(path, "/subscriptions"):
		return []byte(`{"url":"https://example.com/all","types":["leader.begin"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`)
	case path == "/v1/elections/{election}":
		return []byte(`{"error_cooldown":"1s","handover_delay":"0s"}`)
	}
	t.Fatalf("the sweep has no valid body for %s; add one", path)
	return nil
}

// wrongValues are JSON values that are not of schema's type.
func wrongValues(s *openapi3.Schema) []any {
	var out []any
	if s.Type == nil {
		return nil
	}
	if !s.Type.Includes("string") {
		out = append(out, "x")
	}
	if !s.Type.Includes("number") && !s.Type.Includes("integer") {
		out = append(out, 7)
	}
	if !s.Type.Includes("object") {
		out = append(out, map[string]any{"a": 1})
	}
	if !s.Type.Includes("array") {
		out = append(out, []any{"x"})
	}
	if !s.Type.Includes("boolean") {
		out = append(out, true)
	}
	return out
}

func withMember(m map[string]any, k string, v any) map[string]any {
	out := maps.Clone(m)
	out[k] = v
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sweepSend sends one case and checks its answer against openapi.yaml
// (or, for a path the spec has no route for, against the Problem schema).
func sweepSend(t *testing.T, e *env, method string, c sweepCase) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if c.body != nil {
		rd = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+c.path, rd)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	req.Header = c.headers.Clone()
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", c.name, err)
	}
	r := response{Status: res.StatusCode, Header: res.Header, Body: b}
	router, err := specRouter()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := router.FindRoute(req); err != nil {
		doc, _ := spec()
		checkProblemSchema(t, doc, req, r)
	} else {
		validate(t, req, r, false)
	}
	return r
}

// checkSweepAnswer asserts a 4xx problem, naming c.field if it is an
// invalid-request and the case has one.
func checkSweepAnswer(t *testing.T, c sweepCase, r response) {
	t.Helper()
	if r.Status < 400 || r.Status >= 500 {
		t.Errorf("%s: status %d, want a 4xx\n%s", c.name, r.Status, r.Body)
		return
	}
	p := r.json(t)
	if p["status"] != float64(r.Status) || p["detail"] == "" {
		t.Errorf("%s: problem members: %s", c.name, r.Body)
	}
	if r.problemType(t) != "invalid-request" {
		return
	}
	f, _ := p["field"].(string)
	switch {
	case f == "":
		t.Errorf("%s: invalid-request without a field: %s", c.name, r.Body)
	case c.field != "" && f != c.field:
		t.Errorf("%s: field %q, want %q: %s", c.name, f, c.field, r.Body)
	}
}

// tableScope is the scope the routing table gives method path, without
// ProtectOperational and without a candidate token.
func tableScope(t *testing.T, method, pattern string) Scope {
	t.Helper()
	for _, rt := range (&api{}).routes() {
		if rt.method == method && rt.pattern == pattern {
			return scopeOf(Config{}, rt)
		}
	}
	t.Fatalf("%s %s is not in the routing table", method, pattern)
	return ""
}
