package etcd

import "testing"

func TestKeyLayoutParses(t *testing.T) {
	k := keys{p: "elector"}
	tests := []struct {
		key  string
		want parsedKey
	}{
		{"elector/billing/694d7d3a1c2b0f05", parsedKey{kindCandidacy, "billing", "694d7d3a1c2b0f05"}},
		{"elector/_elector/settings/billing", parsedKey{kindSettings, "billing", ""}},
		{"elector/_elector/lead/billing", parsedKey{kindLead, "billing", ""}},
		{"elector/_elector/mark/billing", parsedKey{kindMark, "billing", ""}},
		{"elector/_elector/cooling/billing/694d", parsedKey{kindCooling, "billing", "694d"}},
		{"elector/_elector/ids/billing/node-a.example:8080", parsedKey{kindID, "billing", "node-a.example:8080"}},
		{"elector/Billing/694d", parsedKey{}},            // not an election name
		{"elector/billing/x/694d", parsedKey{}},          // nested: not concurrency.Election's layout
		{"elector/billing/", parsedKey{}},                // no lease
		{"elector/_elector/settings/_ping", parsedKey{}}, // not an election name
		{"elector/_elector/other/billing", parsedKey{}},
		{"elector/_elector/barrier", parsedKey{}},
		{"electorate/billing/694d", parsedKey{}}, // another prefix
		// The KV's keys, even those that spell election keys, are no election's.
		{"elector/_elector/kv/settings/billing", parsedKey{}},
		{"elector/_elector/kv/ids/billing/node-a", parsedKey{}},
		{"elector/_elector/kv/billing/694d", parsedKey{}},
		// Timers' markers.
		{"elector/_elector/handover/billing", parsedKey{kindHandoverMark, "billing", ""}},
		{"elector/_elector/cooldown/billing/694d", parsedKey{kindCooldownMark, "billing", "694d"}},
		{"elector/_elector/cooldown/billing", parsedKey{}}, // a cooldown's marker names its candidacy
		// With the lead record's list form, one marker per slot, by term.
		{"elector/_elector/handover/billing/41", parsedKey{kindHandoverMark, "billing", "41"}},
		{"elector/_elector/handover/billing/041", parsedKey{}},
		{"elector/_elector/handover/billing/694d", parsedKey{}},
		// The holders' promises and the candidacies etcd revoked early.
		{"elector/_elector/promise/billing", parsedKey{kindPromise, "billing", ""}},
		{"elector/_elector/promise/billing/41", parsedKey{kindPromise, "billing", "41"}},
		{"elector/_elector/promise/billing/694d", parsedKey{}},
		{"elector/_elector/promise/billing/", parsedKey{}},
		{"elector/_elector/revoked/billing/694d", parsedKey{kindRevoked, "billing", "694d"}},
		{"elector/_elector/revoked/billing", parsedKey{}},
		// Sessions are no election's, though a session id spells one.
		{"elector/_elector/sessions/ses_abcdefghijklmnopqrstuvwx", parsedKey{kind: kindSession, name: "ses_abcdefghijklmnopqrstuvwx"}},
		{"elector/_elector/sessions/ses_short", parsedKey{}},
		{"elector/_elector/sessions/billing", parsedKey{}},
	}
	for _, tt := range tests {
		if got := k.parse(tt.key); got != tt.want {
			t.Errorf("parse(%q) = %+v, want %+v", tt.key, got, tt.want)
		}
	}
	if got := k.parse(k.candidacy("billing", leaseHex(0x694d7d3a1c2b0f05))); got.kind != kindCandidacy || got.name != "694d7d3a1c2b0f05" {
		t.Errorf("candidacy key does not parse back: %+v", got)
	}
	// A batch holds the campaigns of one session into many elections,
	// which all compare its key (batch.go).
	electionOf := k.electionOf()
	for key, want := range map[string]string{
		k.session("ses_abcdefghijklmnopqrstuvwx"): "",
		k.candidacy("billing", "1a"):              "billing",
		k.line("billing"):                         "billing",
		k.settings("billing"):                     "billing",
		k.promiseOf("billing", "3"):               "billing",
		k.kv("billing/x"):                         "",
		k.version():                               "",
		k.barrier():                               "",
		"other/billing/1a":                        "",
	} {
		if e := electionOf([]byte(key)); string(e) != want {
			t.Errorf("electionOf(%q) = %q, want %q", key, e, want)
		}
	}
}

func TestCursorsParse(t *testing.T) {
	tests := []struct {
		s     string
		rev   int64
		index int
		ok    bool
	}{
		{"42-0", 42, 0, true},
		{"42-3", 42, 3, true},
		{"42", 42, -1, true},
		{"", 0, 0, false},
		{"-1", 0, 0, false},
		{"0", 0, 0, false},
		{"042", 0, 0, false},
		{"42-", 0, 0, false},
		{"42--1", 0, 0, false},
		{"not-a-cursor", 0, 0, false},
		{"9999999999999999999999999999999999999999", 0, 0, false},
	}
	for _, tt := range tests {
		rev, index, ok := parseCursor(tt.s)
		if ok != tt.ok || (ok && (rev != tt.rev || index != tt.index)) {
			t.Errorf("parseCursor(%q) = %d, %d, %v; want %d, %d, %v", tt.s, rev, index, ok, tt.rev, tt.index, tt.ok)
		}
	}
	if rev, index, ok := parseCursor(eventID(7, 2)); !ok || rev != 7 || index != 2 {
		t.Errorf("eventID does not parse back")
	}
}

func TestNativeValuesAreShownAsCandidates(t *testing.T) {
	tests := []struct {
		value, id string
		native    bool
	}{
		{`{"elector":1,"id":"node-a","ttl_ms":1000,"token_hash":"x","at":"2026-01-01T00:00:00Z"}`, "node-a", false},
		{"node-b", "node-b", true},
		{"10.0.0.7:8080", "10.0.0.7:8080", true},
		{"hello world", "etcd:694d", true},
		{`{"id":"spoof"}`, "etcd:694d", true},
		{"", "etcd:694d", true},
	}
	for _, tt := range tests {
		v, native := parseCandidate([]byte(tt.value), "694d")
		if v.ID != tt.id || native != tt.native {
			t.Errorf("parseCandidate(%q) = %q native %v, want %q native %v", tt.value, v.ID, native, tt.id, tt.native)
		}
	}
}
