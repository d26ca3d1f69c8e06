package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestBadRequestsAreProblemsAndChangeNothing sends requests that must fail
// and checks each answer's status and problem type, the field named for
// validation errors, and that the elections are exactly as before.
func TestBadRequestsAreProblemsAndChangeNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{MaxBodyBytes: 4 << 10})
	tokA := e.campaign("billing", "node-a", "1h")
	e.campaign("billing", "node-b", "1h")

	// state is everything a bad request could have changed.
	state := func() string {
		return string(e.do("GET", "/v1/elections", nil).expect(t, http.StatusOK).Body) +
			string(e.do("GET", "/v1/elections/billing/candidates", nil).expect(t, http.StatusOK).Body) +
			string(e.do("GET", "/v1/elections/billing/leader", nil).expect(t, http.StatusOK).Body)
	}
	before := state()

	const (
		camp = "/v1/elections/billing/candidates"
		hb   = "/v1/elections/billing/candidates/node-a/heartbeat"
		res  = "/v1/elections/billing/candidates/node-a"
		rep  = "/v1/elections/billing/candidates/node-a/error"
	)
	big := `{"id":"node-x","metadata":{"blob":"` + strings.Repeat("x", 5000) + `"}}`
	bigMeta := `{"id":"node-x","metadata":{"blob":"` + strings.Repeat("x", 2000) + `"}}`
	tests := []struct {
		name    string
		method  string
		path    string
		body    any
		headers []header
		status  int
		slug    string
		field   string
	}{
		{"truncated JSON", "POST", camp, `{"id":`, nil, 400, "malformed-json", ""},
		{"not JSON", "POST", camp, `id=node-x`, nil, 400, "malformed-json", ""},
		{"JSON array", "POST", camp, `[{"id":"node-x"}]`, nil, 400, "malformed-json", ""},
		{"JSON null", "POST", camp, `null`, nil, 400, "malformed-json", ""},
		{"empty body", "POST", camp, "", nil, 400, "malformed-json", ""},
		{"trailing data", "POST", camp, `{"id":"node-x"} {"id":"node-y"}`, nil, 400, "malformed-json", ""},
		{"unknown member", "POST", camp, `{"id":"node-x","rank":1}`, nil, 400, "invalid-request", "rank"},
		{"missing id", "POST", camp, `{"ttl":"10s"}`, nil, 400, "invalid-request", "id"},
		{"id not a string", "POST", camp, `{"id":7}`, nil, 400, "invalid-request", "id"},
		{"id with a space", "POST", camp, `{"id":"node x"}`, nil, 400, "invalid-request", "id"},
		{"id starting with a dash", "POST", camp, `{"id":"-node"}`, nil, 400, "invalid-request", "id"},
		{"id too long", "POST", camp, fmt.Sprintf(`{"id":%q}`, strings.Repeat("n", 129)), nil, 400, "invalid-request", "id"},
		{"election with capitals", "POST", "/v1/elections/Billing/candidates", `{"id":"node-x"}`, nil, 400, "invalid-request", "election"},
		{"election too long", "POST", "/v1/elections/" + strings.Repeat("e", 64) + "/candidates", `{"id":"node-x"}`, nil, 400, "invalid-request", "election"},
		{"election with a dot", "POST", "/v1/elections/bill.ing/candidates", `{"id":"node-x"}`, nil, 400, "invalid-request", "election"},
		{"ttl below the minimum", "POST", camp, `{"id":"node-x","ttl":"100ms"}`, nil, 400, "invalid-request", "ttl"},
		{"ttl above the maximum", "POST", camp, `{"id":"node-x","ttl":"2h"}`, nil, 400, "invalid-request", "ttl"},
		{"ttl zero", "POST", camp, `{"id":"node-x","ttl":"0s"}`, nil, 400, "invalid-request", "ttl"},
		{"ttl negative", "POST", camp, `{"id":"node-x","ttl":"-5s"}`, nil, 400, "invalid-request", "ttl"},
		{"ttl unparseable", "POST", camp, `{"id":"node-x","ttl":"ten seconds"}`, nil, 400, "invalid-request", "ttl"},
		{"ttl as a number", "POST", camp, `{"id":"node-x","ttl":10}`, nil, 400, "invalid-request", "ttl"},
		{"metadata a string", "POST", camp, `{"id":"node-x","metadata":"10.0.0.7"}`, nil, 400, "invalid-request", "metadata"},
		{"metadata an array", "POST", camp, `{"id":"node-x","metadata":[1,2]}`, nil, 400, "invalid-request", "metadata"},
		{"metadata too big", "POST", camp, bigMeta, nil, 400, "invalid-request", "metadata"},
		{"body too large", "POST", camp, big, nil, 413, "body-too-large", ""},
		{"text/plain", "POST", camp, `{"id":"node-x"}`, []header{contentType("text/plain")}, 415, "unsupported-media-type", ""},
		{"form", "POST", camp, `id=node-x`, []header{contentType("application/x-www-form-urlencoded")}, 415, "unsupported-media-type", ""},
		{"candidate exists", "POST", camp, `{"id":"node-a"}`, nil, 409, "candidate-exists", ""},
		{"id not UTF-8", "POST", camp, "{\"id\":\"node-\xff\"}", nil, 400, "invalid-request", "id"},
		{"webhook url not UTF-8", "POST", camp, "{\"id\":\"node-x\",\"webhook\":{\"url\":\"https://example.com/\xff\"}}", nil, 400, "invalid-request", "webhook.url"},
		{"reason not UTF-8", "POST", rep, "{\"reason\":\"hook \xff\xfe failed\"}", []header{token(tokA)}, 400, "invalid-request", "reason"},
		{"deliveries limit with a bad escape", "GET", "/v1/elections/billing/candidates/node-a/deliveries?limit=%ZZ", nil, []header{token(tokA)}, 400, "invalid-request", "limit"},
		{"events with a bad escape", "GET", "/v1/elections/billing/events?last_event_id=%G1", nil, nil, 400, "invalid-request", "last_event_id"},
		{"all events with a bad query", "GET", "/v1/events?%ZZ", nil, nil, 400, "invalid-request", "query"},
		{"deliveries limit with a semicolon", "GET", "/v1/elections/billing/candidates/node-a/deliveries?limit=5;x=1", nil, []header{token(tokA)}, 400, "invalid-request", "query"},
		{"leader read of an unknown consistency", "GET", "/v1/elections/billing/leader?consistency=stale", nil, nil, 400, "invalid-request", "consistency"},
		{"leader read of an empty consistency", "GET", "/v1/elections/billing/leader?consistency=", nil, nil, 400, "invalid-request", "consistency"},
		{"consistency given twice", "GET", "/v1/elections/billing?consistency=local&consistency=local", nil, nil, 400, "invalid-request", "consistency"},
		{"consistency in capitals", "GET", "/v1/elections?consistency=LOCAL", nil, nil, 400, "invalid-request", "consistency"},
		{"candidates of a bad consistency", "GET", camp + "?consistency=serializable", nil, nil, 400, "invalid-request", "consistency"},
		{"candidate of a bad escape", "GET", res + "?consistency=%ZZ", nil, nil, 400, "invalid-request", "consistency"},
		{"heartbeat without token", "PUT", hb, nil, nil, 400, "candidate-token-missing", ""},
		{"heartbeat with a wrong token", "PUT", hb, nil, []header{token("ect_wrong")}, 403, "candidate-token-mismatch", ""},
		{"heartbeat of an unknown candidate", "PUT", "/v1/elections/billing/candidates/node-z/heartbeat", nil, []header{token(tokA)}, 404, "candidate-not-found", ""},
		{"heartbeat in an unknown election", "PUT", "/v1/elections/payroll/candidates/node-a/heartbeat", nil, []header{token(tokA)}, 404, "candidate-not-found", ""},
		{"heartbeat of an invalid id", "PUT", "/v1/elections/billing/candidates/node%20a/heartbeat", nil, []header{token(tokA)}, 400, "invalid-request", "id"},
		{"resign without token", "DELETE", res, nil, nil, 400, "candidate-token-missing", ""},
		{"resign with a wrong token", "DELETE", res, nil, []header{token("ect_wrong")}, 403, "candidate-token-mismatch", ""},
		{"resign of another candidate", "DELETE", "/v1/elections/billing/candidates/node-b", nil, []header{token(tokA)}, 403, "candidate-token-mismatch", ""},
		{"error report with a wrong token", "POST", rep, nil, []header{token("ect_wrong")}, 403, "candidate-token-mismatch", ""},
		{"error report with a numeric reason", "POST", rep, `{"reason":1}`, []header{token(tokA)}, 400, "invalid-request", "reason"},
		{"error report with a long reason", "POST", rep, fmt.Sprintf(`{"reason":%q}`, strings.Repeat("r", 1025)), []header{token(tokA)}, 400, "invalid-request", "reason"},
		{"error report with an unknown member", "POST", rep, `{"why":"x"}`, []header{token(tokA)}, 400, "invalid-request", "why"},
		{"patch with a negative duration", "PATCH", "/v1/elections/billing", `{"error_cooldown":"-5s"}`, nil, 400, "invalid-request", "error_cooldown"},
		{"patch above the maximum", "PATCH", "/v1/elections/billing", `{"handover_delay":"2h"}`, nil, 400, "invalid-request", "handover_delay"},
		{"patch with a number", "PATCH", "/v1/elections/billing", `{"handover_delay":5}`, nil, 400, "invalid-request", "handover_delay"},
		{"patch with an unknown member", "PATCH", "/v1/elections/billing", `{"ttl":"5s"}`, nil, 400, "invalid-request", "ttl"},
		{"patch as text", "PATCH", "/v1/elections/billing", `{"error_cooldown":"5s"}`, []header{contentType("text/plain")}, 415, "unsupported-media-type", ""},
		{"patch of a new election, invalid", "PATCH", "/v1/elections/payroll", `{"error_cooldown":"soon"}`, nil, 400, "invalid-request", "error_cooldown"},
		{"patch without a body", "PATCH", "/v1/elections/billing", nil, nil, 400, "malformed-json", ""},
		{"leader of an unknown election", "GET", "/v1/elections/payroll/leader", nil, nil, 404, "election-not-found", ""},
		{"candidates of an unknown election", "GET", "/v1/elections/payroll/candidates", nil, nil, 404, "election-not-found", ""},
		{"unknown election", "GET", "/v1/elections/payroll", nil, nil, 404, "election-not-found", ""},
		{"invalid election name", "GET", "/v1/elections/-x", nil, nil, 400, "invalid-request", "election"},
		{"events of an invalid election", "GET", "/v1/elections/UPPER/events", nil, nil, 400, "invalid-request", "election"},
		{"unknown route", "GET", "/v2/elections", nil, nil, 404, "not-found", ""},
		{"wrong method", "PUT", "/v1/elections", nil, nil, 405, "method-not-allowed", ""},
	}
	outer := e.t
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			defer func() { e.t = outer }()
			r := e.do(tt.method, tt.path, tt.body, tt.headers...).expect(t, tt.status)
			p := r.json(t)
			if got := r.problemType(t); got != tt.slug {
				t.Errorf("problem %q, want %q: %s", got, tt.slug, r.Body)
			}
			if p["status"] != float64(tt.status) || p["instance"] == nil || p["detail"] == "" {
				t.Errorf("problem members: %s", r.Body)
			}
			if tt.field != "" && p["field"] != tt.field {
				t.Errorf("field %v, want %q: %s", p["field"], tt.field, r.Body)
			}
			if after := state(); after != before {
				t.Errorf("state changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func TestMethodNotAllowedListsAllowedMethods(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	r := e.do("POST", "/v1/elections/billing", nil).expect(t, http.StatusMethodNotAllowed)
	if allow := r.Header.Get("Allow"); allow != "GET, PATCH, DELETE" {
		t.Errorf("Allow %q, want GET, PATCH, DELETE", allow)
	}
}
