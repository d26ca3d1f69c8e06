package api

import (
	"net/http"
	"strings"
	"testing"
)

func TestTransferWithCooperatingLeaderOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	ta := e.campaign("ship", "node-a", "1m")
	tb := e.campaign("ship", "node-b", "1m")
	e.campaign("ship", "node-c", "1m")

	r := e.do("POST", "/v1/elections/ship/transfer", `{"to":"node-c"}`).expect(t, http.StatusAccepted).json(t)
	if tr, _ := r["transfer"].(map[string]any); tr["to"] != "node-c" || tr["reason"] != "transferred" || r["leader"].(map[string]any)["id"] != "node-a" {
		t.Fatalf("after the request: %v", r)
	}
	// The leader's heartbeat is refused and tells it what to do.
	p := e.do("PUT", "/v1/elections/ship/candidates/node-a/heartbeat", nil, token(ta)).expect(t, http.StatusConflict)
	if p.problemType(t) != "transfer-pending" || p.json(t)["transfer"].(map[string]any)["to"] != "node-c" {
		t.Fatalf("leader heartbeat: %s", p.Body)
	}
	// A follower's heartbeat carries the pending transfer.
	hb := e.do("PUT", "/v1/elections/ship/candidates/node-b/heartbeat", nil, token(tb)).expect(t, http.StatusOK).json(t)
	if hb["transfer"].(map[string]any)["to"] != "node-c" {
		t.Fatalf("follower heartbeat: %v", hb)
	}
	// Another target is refused while this one is pending.
	if p := e.do("POST", "/v1/elections/ship/transfer", `{"to":"node-b"}`).expect(t, http.StatusConflict); p.problemType(t) != "transfer-pending" {
		t.Fatalf("second transfer: %s", p.Body)
	}
	// Only the leader hands over.
	if p := e.do("POST", "/v1/elections/ship/candidates/node-b/handover", nil, token(tb)).expect(t, http.StatusConflict); p.problemType(t) != "not-leader" {
		t.Fatalf("handover by a follower: %s", p.Body)
	}
	st := e.do("POST", "/v1/elections/ship/candidates/node-a/handover", nil, token(ta)).expect(t, http.StatusOK).json(t)
	if st["state"] != "follower" || st["leader"].(map[string]any)["id"] != "node-c" || st["term"] != 2.0 || st["transfer"] != nil {
		t.Fatalf("after handover: %v", st)
	}
	if id, term := e.leader("ship"); id != "node-c" || term != 2 {
		t.Fatalf("leader %s term %v, want node-c term 2", id, term)
	}
	e.do("PUT", "/v1/elections/ship/candidates/node-a/heartbeat", nil, token(ta)).expect(t, http.StatusOK)
	if p := e.do("POST", "/v1/elections/ship/candidates/node-c/handover", nil, token(ta)).expect(t, http.StatusForbidden); p.problemType(t) != "candidate-token-mismatch" {
		t.Fatalf("handover with another's token: %s", p.Body)
	}
}

func TestTransferRefusalsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	for _, tt := range []struct {
		name, body string
		status     int
		slug       string
	}{
		{"no such election", `{"to":"node-b"}`, http.StatusNotFound, "election-not-found"},
		{"to missing", `{}`, http.StatusBadRequest, "invalid-request"},
		{"to not a string", `{"to":7}`, http.StatusBadRequest, "invalid-request"},
		{"to not an id", `{"to":"-bad id"}`, http.StatusBadRequest, "invalid-request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.do("POST", "/v1/elections/void/transfer", tt.body).expect(t, tt.status).problemType(t); got != tt.slug {
				t.Fatalf("problem %s, want %s", got, tt.slug)
			}
		})
	}
	ta := e.campaign("refuse", "node-a", "1m")
	e.campaign("refuse", "node-b", "1m")
	for _, tt := range []struct {
		name, body string
		headers    []header
		status     int
		slug       string
	}{
		{"to the leader", `{"to":"node-a"}`, nil, http.StatusConflict, "not-a-follower"},
		{"to nobody", `{"to":"node-x"}`, nil, http.StatusConflict, "not-a-follower"},
		{"with a token not the leader's", `{"to":"node-b"}`, []header{token("ect_not_the_leaders")}, http.StatusConflict, "not-leader"},
		{"handover without a transfer", "", []header{token(ta)}, http.StatusConflict, "no-transfer-pending"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, body := "/v1/elections/refuse/transfer", any(tt.body)
			if tt.body == "" {
				path, body = "/v1/elections/refuse/candidates/node-a/handover", nil
			}
			if got := e.do("POST", path, body, tt.headers...).expect(t, tt.status).problemType(t); got != tt.slug {
				t.Fatalf("problem %s, want %s", got, tt.slug)
			}
		})
	}
	// The leader may ask with its own token.
	e.do("POST", "/v1/elections/refuse/transfer", `{"to":"node-b"}`, token(ta)).expect(t, http.StatusAccepted)
}

func TestPrioritiesAndPreemptOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	r := e.do("PATCH", "/v1/elections/prio", `{"preempt":true}`).expect(t, http.StatusOK).json(t)
	if r["settings"].(map[string]any)["preempt"] != true {
		t.Fatalf("settings %v", r["settings"])
	}
	ta := e.do("POST", "/v1/elections/prio/candidates", `{"id":"node-a","ttl":"1m"}`).expect(t, http.StatusCreated).json(t)["token"].(string)
	e.do("POST", "/v1/elections/prio/candidates", `{"id":"node-b","ttl":"1m","priority":1}`).expect(t, http.StatusCreated)
	c := e.do("POST", "/v1/elections/prio/candidates", `{"id":"node-c","ttl":"1m","priority":5}`).expect(t, http.StatusCreated).json(t)
	if c["position"] != 1.0 || c["priority"] != 5.0 || c["transfer"].(map[string]any)["reason"] != "preempted" {
		t.Fatalf("high-priority campaign: %v", c)
	}
	list := e.do("GET", "/v1/elections/prio/candidates", nil).expect(t, http.StatusOK).json(t)["candidates"].([]any)
	var order []string
	for _, x := range list {
		order = append(order, x.(map[string]any)["id"].(string))
	}
	if len(order) != 3 || order[0] != "node-a" || order[1] != "node-c" || order[2] != "node-b" {
		t.Fatalf("line %v, want the leader, then by priority", order)
	}
	e.do("POST", "/v1/elections/prio/candidates/node-a/handover", nil, token(ta)).expect(t, http.StatusOK)
	if id, term := e.leader("prio"); id != "node-c" || term != 2 {
		t.Fatalf("leader %s term %v, want node-c term 2", id, term)
	}
	if p := e.do("POST", "/v1/elections/prio/candidates", `{"id":"node-d","priority":1001}`).expect(t, http.StatusBadRequest).json(t); p["field"] != "priority" {
		t.Fatalf("priority out of range: %v", p)
	}
	if p := e.do("PATCH", "/v1/elections/prio", `{"preempt":"yes"}`).expect(t, http.StatusBadRequest).json(t); p["field"] != "preempt" {
		t.Fatalf("preempt not a boolean: %v", p)
	}
	r = e.do("PATCH", "/v1/elections/prio", `{"preempt":null}`).expect(t, http.StatusOK).json(t)
	if r["settings"].(map[string]any)["preempt"] != false {
		t.Fatalf("preempt reset: %v", r["settings"])
	}
}

func TestTransferScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Tokens: authTokens()})
	camp, admin := bearerHeader(campaignBillingTok), bearerHeader(adminAllToken)
	r := e.do("POST", "/v1/elections/billing-x/candidates", `{"id":"node-a","ttl":"1m"}`, camp).expect(t, http.StatusCreated)
	ta := r.json(t)["token"].(string)
	e.do("POST", "/v1/elections/billing-x/candidates", `{"id":"node-b","ttl":"1m"}`, camp).expect(t, http.StatusCreated)
	// Campaign scope without the leader's token: the route needs admin.
	if p := e.do("POST", "/v1/elections/billing-x/transfer", `{"to":"node-b"}`, camp).expect(t, http.StatusForbidden).json(t); p["scope"] != "admin" {
		t.Fatalf("campaign scope without a candidate token: %v", p)
	}
	// Admin with a candidate token is asking as that candidate: campaign scope.
	if p := e.do("POST", "/v1/elections/billing-x/transfer", `{"to":"node-b"}`, admin, token(ta)).expect(t, http.StatusForbidden).json(t); p["scope"] != "campaign" {
		t.Fatalf("admin scope with a candidate token: %v", p)
	}
	e.do("POST", "/v1/elections/billing-x/transfer", `{"to":"node-b"}`, camp, token(ta)).expect(t, http.StatusAccepted)
	e.do("POST", "/v1/elections/billing-x/transfer", `{"to":"node-b"}`, admin).expect(t, http.StatusAccepted)
}

func TestTransferEventsOnTheStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	ta := e.campaign("live", "node-a", "1m")
	e.campaign("live", "node-b", "1m")
	tc := e.campaign("live", "node-c", "1m")
	s := e.stream("/v1/elections/live/events")
	if reset := s.next(); reset.Event != EventReset {
		t.Fatalf("first event %+v, want a reset", reset)
	}
	e.do("POST", "/v1/elections/live/transfer", `{"to":"node-c"}`).expect(t, http.StatusAccepted)
	e.do("DELETE", "/v1/elections/live/candidates/node-c", nil, token(tc)).expect(t, http.StatusNoContent)
	e.do("POST", "/v1/elections/live/transfer", `{"to":"node-b"}`).expect(t, http.StatusAccepted)
	e.do("POST", "/v1/elections/live/candidates/node-a/handover", nil, token(ta)).expect(t, http.StatusOK)
	var got []string
	for _, ev := range collectUntil(t, s, "leader.begin", "node-b") {
		d := ev.json(t)["data"].(map[string]any)
		got = append(got, ev.Event+"("+d["candidate"].(map[string]any)["id"].(string)+","+d["reason"].(string)+")")
		if ev.Event == "leader.transfer" {
			if p := d["previous"].(map[string]any); p["id"] != "node-a" || p["term"] != 1.0 {
				t.Fatalf("leader.transfer names %v, want node-a in term 1", p)
			}
		}
	}
	want := []string{"leader.transfer(node-c,transferred)", "leader.transfer_cancelled(node-c,resigned)", "candidate.left(node-c,resigned)",
		"leader.transfer(node-b,transferred)", "leader.end(node-a,transferred)", "leader.begin(node-b,transferred)"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
}

func TestCancelTransferOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	ta := e.campaign("undo", "node-a", "1m")
	tb := e.campaign("undo", "node-b", "1m")
	if p := e.do("DELETE", "/v1/elections/undo/transfer", nil).expect(t, http.StatusConflict); p.problemType(t) != "no-transfer-pending" ||
		!strings.Contains(p.json(t)["detail"].(string), "no leadership transfer to cancel") {
		t.Fatalf("cancel with none pending: %s", p.Body)
	}
	s := e.stream("/v1/elections/undo/events")
	if reset := s.next(); reset.Event != EventReset {
		t.Fatalf("first event %+v, want a reset", reset)
	}
	e.do("POST", "/v1/elections/undo/transfer", `{"to":"node-b"}`).expect(t, http.StatusAccepted)
	e.do("PUT", "/v1/elections/undo/candidates/node-a/heartbeat", nil, token(ta)).expect(t, http.StatusConflict)
	// Only the leader's own candidate token, or none (an operator).
	if p := e.do("DELETE", "/v1/elections/undo/transfer", nil, token(tb)).expect(t, http.StatusConflict); p.problemType(t) != "not-leader" ||
		!strings.Contains(p.json(t)["detail"].(string), "may cancel a transfer") {
		t.Fatalf("cancel with a follower's token: %s", p.Body)
	}
	r := e.do("DELETE", "/v1/elections/undo/transfer", nil, token(ta)).expect(t, http.StatusOK).json(t)
	if r["transfer"] != nil || r["leader"].(map[string]any)["id"] != "node-a" || r["term"] != 1.0 {
		t.Fatalf("after the cancellation: %v", r)
	}
	hb := e.do("PUT", "/v1/elections/undo/candidates/node-a/heartbeat", nil, token(ta)).expect(t, http.StatusOK).json(t)
	if hb["state"] != "leader" || hb["term"] != 1.0 {
		t.Fatalf("leader heartbeat after the cancellation: %v", hb)
	}
	if p := e.do("POST", "/v1/elections/undo/candidates/node-a/handover", nil, token(ta)).expect(t, http.StatusConflict); p.problemType(t) != "no-transfer-pending" {
		t.Fatalf("handover after the cancellation: %s", p.Body)
	}
	ev := collectUntil(t, s, "leader.transfer_cancelled", "node-b")
	if d := ev[len(ev)-1].json(t)["data"].(map[string]any); d["reason"] != "cancelled" || d["term"] != 1.0 {
		t.Fatalf("leader.transfer_cancelled: %v", d)
	}
	if p := e.do("DELETE", "/v1/elections/nowhere/transfer", nil).expect(t, http.StatusNotFound); p.problemType(t) != "election-not-found" {
		t.Fatalf("cancel in no election: %s", p.Body)
	}
	if p := e.do("DELETE", "/v1/elections/Bad!/transfer", nil).expect(t, http.StatusBadRequest); p.problemType(t) != "invalid-request" {
		t.Fatalf("cancel in a bad name: %s", p.Body)
	}

	// A preemption is cancelled once preempt is off.
	e.do("PATCH", "/v1/elections/undo-p", `{"preempt":true}`).expect(t, http.StatusOK)
	e.campaign("undo-p", "node-a", "1m")
	e.do("POST", "/v1/elections/undo-p/candidates", `{"id":"node-b","ttl":"1m","priority":3}`).expect(t, http.StatusCreated)
	if p := e.do("DELETE", "/v1/elections/undo-p/transfer", nil).expect(t, http.StatusConflict); p.problemType(t) != "preempt-on" ||
		!strings.Contains(p.json(t)["detail"].(string), `{"preempt": false}`) {
		t.Fatalf("cancel a preemption with preempt on: %s", p.Body)
	}
	e.do("PATCH", "/v1/elections/undo-p", `{"preempt":false}`).expect(t, http.StatusOK)
	e.do("DELETE", "/v1/elections/undo-p/transfer", nil).expect(t, http.StatusOK)
}

func TestCancelTransferScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Tokens: authTokens()})
	camp, admin := bearerHeader(campaignBillingTok), bearerHeader(adminAllToken)
	ta := e.do("POST", "/v1/elections/billing-y/candidates", `{"id":"node-a","ttl":"1m"}`, camp).expect(t, http.StatusCreated).json(t)["token"].(string)
	e.do("POST", "/v1/elections/billing-y/candidates", `{"id":"node-b","ttl":"1m"}`, camp).expect(t, http.StatusCreated)
	e.do("POST", "/v1/elections/billing-y/transfer", `{"to":"node-b"}`, admin).expect(t, http.StatusAccepted)
	if p := e.do("DELETE", "/v1/elections/billing-y/transfer", nil, camp).expect(t, http.StatusForbidden).json(t); p["scope"] != "admin" {
		t.Fatalf("campaign scope without a candidate token: %v", p)
	}
	e.do("DELETE", "/v1/elections/billing-y/transfer", nil).expect(t, http.StatusUnauthorized)
	e.do("DELETE", "/v1/elections/billing-y/transfer", nil, camp, token(ta)).expect(t, http.StatusOK)
	e.do("POST", "/v1/elections/billing-y/transfer", `{"to":"node-b"}`, camp, token(ta)).expect(t, http.StatusAccepted)
	e.do("DELETE", "/v1/elections/billing-y/transfer", nil, admin).expect(t, http.StatusOK)
}
