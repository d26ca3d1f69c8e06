package api

import (
	"net/http"
	"testing"
)

// FuzzCampaignBody posts arbitrary bodies to the campaign endpoint: the
// answer is a 201 or a 4xx problem, never a 5xx, and always matches
// openapi.yaml (the request helper validates it).
func FuzzCampaignBody(f *testing.F) {
	for _, seed := range []string{
		`{"id":"node-a"}`,
		`{"id":"node-a","ttl":"10s","metadata":{"addr":"10.0.0.7:8080"}}`,
		`{"id":"node-b","ttl":"1h","metadata":{}}`,
		`{"id":"node-c","metadata":null,"ttl":null}`,
		`{"id":"n","ttl":"9223372036854775807ns"}`,
		`{"id":"n","ttl":"1e3s"}`,
		`{"id":"\u00e9"}`,
		`{"id":"n","metadata":{"a":"\ud800"}}`,
		`{"id":"n","metadata":{"a":[1,2,{"b":null}]}}`,
		`{"id":"n","metadata":"\"x\""}`,
		`{"id":"n"}{"id":"m"}`,
		`{"id":"n","id":"m"}`,
		`[]`, `null`, `""`, `1e999`, `{`, `{"id":`, "\xff\xfe", `{"id":"n","ttl":"-1s"}`,
		"",
	} {
		f.Add([]byte(seed))
	}
	e := newEnv(f, Config{})
	f.Fuzz(func(t *testing.T, body []byte) {
		e.t = t
		r := e.do("POST", "/v1/elections/fuzz/candidates", body)
		switch {
		case r.Status == http.StatusCreated:
			if r.json(t)["token"] == "" {
				t.Errorf("201 without a token: %s", r.Body)
			}
		case r.Status >= 400 && r.Status < 500:
			if r.problemType(t) == "" {
				t.Errorf("4xx without a problem type: %s", r.Body)
			}
		default:
			t.Errorf("status %d for body %q: %s", r.Status, body, r.Body)
		}
	})
}

// FuzzSettingsPatch patches an election with arbitrary bodies, with its
// holders among the members: the answer is a 200 or a 4xx problem, never a
// 5xx, always matches openapi.yaml, and a 200 shows holders within bounds.
func FuzzSettingsPatch(f *testing.F) {
	for _, seed := range []string{
		`{"holders":2}`, `{"holders":64}`, `{"holders":65}`, `{"holders":0}`, `{"holders":-3}`,
		`{"holders":null}`, `{"holders":"3"}`, `{"holders":2.0}`, `{"holders":1e2}`, `{"holders":9223372036854775808}`,
		`{"holders":3,"preempt":true,"handover_delay":"1s"}`, `{"error_cooldown":"5s"}`, `{}`, `[]`, `null`, "",
	} {
		f.Add([]byte(seed))
	}
	e := newEnv(f, Config{})
	f.Fuzz(func(t *testing.T, body []byte) {
		e.t = t
		r := e.do("PATCH", "/v1/elections/fuzz", body, contentType("application/merge-patch+json"))
		switch {
		case r.Status == http.StatusOK:
			s := r.json(t)["settings"].(map[string]any)
			if h, _ := s["holders"].(float64); h < 1 || h > 64 {
				t.Errorf("holders %v after %q", s["holders"], body)
			}
		case r.Status >= 400 && r.Status < 500:
			if r.problemType(t) == "" {
				t.Errorf("4xx without a problem type: %s", r.Body)
			}
		default:
			t.Errorf("status %d for body %q: %s", r.Status, body, r.Body)
		}
	})
}
