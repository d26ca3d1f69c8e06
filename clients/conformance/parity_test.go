package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/electorhq/elector"
)

// clientMethods names, per operationId of openapi.yaml, the method of the
// Client of each client that makes that call.
var clientMethods = map[string]struct{ Go, Python, TS string }{
	"campaign":                      {"Campaign", "campaign", "campaign"},
	"listCandidates":                {"Candidates", "candidates", "candidates"},
	"getCandidate":                  {"Candidate", "candidate", "candidate"},
	"resign":                        {"Resign", "resign", "resign"},
	"heartbeat":                     {"Heartbeat", "heartbeat", "heartbeat"},
	"reportError":                   {"ReportError", "report_error", "reportError"},
	"handover":                      {"Handover", "handover", "handover"},
	"transfer":                      {"Transfer", "transfer", "transfer"},
	"cancelTransfer":                {"CancelTransfer", "cancel_transfer", "cancelTransfer"},
	"openSession":                   {"OpenSession", "open_session", "openSession"},
	"heartbeatSession":              {"HeartbeatSession", "heartbeat_session", "heartbeatSession"},
	"closeSession":                  {"CloseSession", "close_session", "closeSession"},
	"getLeader":                     {"Leader", "leader", "leader"},
	"listElections":                 {"Elections", "elections", "elections"},
	"getElection":                   {"Election", "election", "election"},
	"patchElection":                 {"Configure", "configure", "configure"},
	"deleteElection":                {"DeleteElection", "delete_election", "deleteElection"},
	"streamElectionEvents":          {"Watch", "watch", "watch"},
	"streamAllEvents":               {"Watch", "watch", "watch"}, // with no election
	"healthz":                       {"Health", "health", "health"},
	"readyz":                        {"Ready", "ready", "ready"},
	"createSubscription":            {"Subscribe", "subscribe", "createSubscription"},
	"listSubscriptions":             {"Subscriptions", "subscriptions", "subscriptions"},
	"getSubscription":               {"Subscription", "subscription", "subscription"},
	"deleteSubscription":            {"Unsubscribe", "unsubscribe", "deleteSubscription"},
	"rotateSubscriptionSecret":      {"RotateSecret", "rotate_secret", "rotateSubscriptionSecret"},
	"listSubscriptionDeliveries":    {"Deliveries", "deliveries", "subscriptionDeliveries"},
	"getSubscriptionDelivery":       {"Delivery", "delivery", "subscriptionDelivery"},
	"redeliverSubscriptionDelivery": {"Redeliver", "redeliver", "redeliverSubscriptionDelivery"},
	"listCandidateDeliveries":       {"CandidateDeliveries", "candidate_deliveries", "candidateDeliveries"},
	"redeliverCandidateDelivery":    {"RedeliverCandidate", "redeliver_candidate", "redeliverCandidateDelivery"},
}

// notClientCalls are the operations of openapi.yaml that no client makes,
// and why.
var notClientCalls = map[string]string{
	// The webhooks: requests the gateway sends to receivers. Clients
	// verify them (client.ReadWebhook, elector.webhooks.verify,
	// WebhookReceiver); they do not make them.
	"onLeaderBegin":             "a webhook the gateway sends",
	"onLeaderEnd":               "a webhook the gateway sends",
	"onLeaderError":             "a webhook the gateway sends",
	"onCandidateJoined":         "a webhook the gateway sends",
	"onCandidateLeft":           "a webhook the gateway sends",
	"onLeaderTransfer":          "a webhook the gateway sends",
	"onLeaderTransferCancelled": "a webhook the gateway sends",
	// Operations: Prometheus scrapes the metrics, in its text format.
	"metrics": "Prometheus scrapes it",
	// The contract itself, for tools and code generators.
	"openapi":     "the API description, for tools",
	"openapiJSON": "the API description, for tools",
	// Pages and their assets, for browsers.
	"root":      "a page for browsers",
	"rootHead":  "a page for browsers",
	"docs":      "a page for browsers",
	"docsHead":  "a page for browsers",
	"docsAsset": "an asset of a page",
	"ui":        "a page for browsers",
	"uiAsset":   "an asset of a page",
}

// neverReceived are the problem types no client can get an answer with.
var neverReceived = map[string]string{
	"client-closed-request": "the client went away before the answer; only logs and metrics carry it",
}

// sourceClient is one client as its source text shows it.
type sourceClient struct {
	name string // "Go client (client/)"
	// methodFiles hold the Client class (type) and its methods,
	// problemFiles the map of problem slugs; globs, test files left out.
	methodFiles, problemFiles []string
	// method matches the definition of a Client method of the name
	// given.
	method func(name string) *regexp.Regexp
	// problems is the text of the client's map of problem slugs.
	problems *regexp.Regexp
}

func sourceClients() []sourceClient {
	return []sourceClient{
		{
			name:         "Go client (client/)",
			methodFiles:  []string{"../../client/*.go"},
			problemFiles: []string{"../../client/errors.go"},
			method: func(name string) *regexp.Regexp {
				return regexp.MustCompile(`(?m)^func \(\w+ \*Client\) ` + regexp.QuoteMeta(name) + `\(`)
			},
			problems: regexp.MustCompile(`(?s)\nvar problemSentinels = map\[string\]error\{\n(.*?)\n\}`),
		},
		{
			name:         "Python client (clients/python/elector)",
			methodFiles:  []string{"../python/elector/client.py"},
			problemFiles: []string{"../python/elector/errors.py"},
			method: func(name string) *regexp.Regexp {
				return regexp.MustCompile(`(?m)^    def ` + regexp.QuoteMeta(name) + `\(`)
			},
			problems: regexp.MustCompile(`(?s)\nPROBLEM_CLASSES: [^\n]*= \{\n(.*?)\n\}`),
		},
		{
			name:         "TypeScript client (clients/typescript/src)",
			methodFiles:  []string{"../typescript/src/client.ts"},
			problemFiles: []string{"../typescript/src/errors.ts"},
			method: func(name string) *regexp.Regexp {
				return regexp.MustCompile(`(?m)^  (?:async )?` + regexp.QuoteMeta(name) + `\(`)
			},
			problems: regexp.MustCompile(`(?s)\nconst problemClasses: [^\n]*= \{\n(.*?)\n\};`),
		},
	}
}

// text returns the source text of files (globs), test files left out.
func (sc sourceClient) text(t *testing.T, files []string) string {
	t.Helper()
	var b strings.Builder
	for _, pattern := range files {
		paths, err := filepath.Glob(pattern)
		if err != nil || len(paths) == 0 {
			t.Fatalf("the %s: no file %s", sc.name, pattern)
		}
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(src)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// methodOf returns the client's method name of an operation.
func (sc sourceClient) methodOf(i int, op string) string {
	m := clientMethods[op]
	return [...]string{m.Go, m.Python, m.TS}[i]
}

// spec is what the parity test reads of openapi.yaml.
type spec struct {
	operations map[string]string // operationId → "GET /path" or "webhook leader.begin"
	problems   []string          // the slugs of the Problem type enum
}

func readSpec(t *testing.T) spec {
	t.Helper()
	var doc struct {
		Paths      map[string]map[string]any `json:"paths"`
		Webhooks   map[string]map[string]any `json:"webhooks"`
		Components struct {
			Schemas struct {
				Problem struct {
					Properties struct {
						Type struct {
							Enum []string `json:"enum"`
						} `json:"type"`
					} `json:"properties"`
				} `json:"Problem"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := yaml.Unmarshal(elector.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	s := spec{operations: map[string]string{}}
	add := func(where string, item map[string]any) {
		for method, op := range item {
			o, ok := op.(map[string]any)
			if !ok {
				continue
			}
			if id, ok := o["operationId"].(string); ok {
				s.operations[id] = strings.ToUpper(method) + " " + where
			}
		}
	}
	for path, item := range doc.Paths {
		add(path, item)
	}
	for name, item := range doc.Webhooks {
		add("(webhook "+name+")", item)
	}
	// Every operationId of the file is one the walk above found: none
	// hides where the parity test does not look.
	if n := regexp.MustCompile(`(?m)^\s+operationId:`).FindAll(elector.OpenAPI, -1); len(n) != len(s.operations) {
		t.Fatalf("openapi.yaml has %d operationIds, the parity test found %d in paths and webhooks: read the others too", len(n), len(s.operations))
	}
	for _, typ := range doc.Components.Schemas.Problem.Properties.Type.Enum {
		slug, ok := strings.CutPrefix(typ, "urn:elector:problem:")
		if !ok {
			t.Fatalf("openapi.yaml: problem type %q without the urn:elector:problem: prefix", typ)
		}
		s.problems = append(s.problems, slug)
	}
	if len(s.operations) == 0 || len(s.problems) == 0 {
		t.Fatalf("openapi.yaml: found %d operations and %d problem types", len(s.operations), len(s.problems))
	}
	return s
}

// TestParityEveryOperationHasAMethodInEveryClient: each operation of
// openapi.yaml that a program calls has a method in the Client of the Go,
// Python and TypeScript clients, as clientMethods names it; the others
// are in notClientCalls, with the reason.
func TestParityEveryOperationHasAMethodInEveryClient(t *testing.T) {
	s := readSpec(t)
	ops := make([]string, 0, len(s.operations))
	for op := range s.operations {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	clients := sourceClients()
	texts := make([]string, len(clients))
	for i, sc := range clients {
		texts[i] = sc.text(t, sc.methodFiles)
	}
	for _, op := range ops {
		_, excluded := notClientCalls[op]
		_, mapped := clientMethods[op]
		switch {
		case excluded && mapped:
			t.Errorf("operation %s (%s) is both in clientMethods and in notClientCalls of parity_test.go", op, s.operations[op])
		case excluded:
		case !mapped:
			var names []string
			for _, sc := range clients {
				names = append(names, "the "+sc.name)
			}
			t.Errorf("operation %s (%s) of openapi.yaml has no method in %s: add one to each and name them in clientMethods of parity_test.go (or, if no program calls it, put it in notClientCalls with the reason)",
				op, s.operations[op], strings.Join(names, ", "))
		default:
			for i, sc := range clients {
				name := sc.methodOf(i, op)
				if name == "" || !sc.method(name).MatchString(texts[i]) {
					t.Errorf("operation %s (%s): the %s has no Client method %q", op, s.operations[op], sc.name, name)
				}
			}
		}
	}
	for op := range clientMethods {
		if _, ok := s.operations[op]; !ok {
			t.Errorf("clientMethods of parity_test.go names operation %s, which openapi.yaml no longer has", op)
		}
	}
	for op := range notClientCalls {
		if _, ok := s.operations[op]; !ok {
			t.Errorf("notClientCalls of parity_test.go names operation %s, which openapi.yaml no longer has", op)
		}
	}
}

// TestParityEveryProblemTypeIsMappedByEveryClient: each problem type of
// openapi.yaml's Problem schema (but those never received) is in the Go
// client's problemSentinels, Python's PROBLEM_CLASSES and TypeScript's
// problemClasses, and those map no type the schema does not have.
func TestParityEveryProblemTypeIsMappedByEveryClient(t *testing.T) {
	s := readSpec(t)
	key := regexp.MustCompile(`(?m)^\s*"?([a-z][a-z-]*)"?\s*:`)
	for _, sc := range sourceClients() {
		m := sc.problems.FindStringSubmatch(sc.text(t, sc.problemFiles))
		if m == nil {
			t.Errorf("the %s: its map of problem types was not found (%s)", sc.name, sc.problems)
			continue
		}
		var mapped []string
		for _, k := range key.FindAllStringSubmatch(m[1], -1) {
			mapped = append(mapped, k[1])
		}
		for _, slug := range s.problems {
			if _, never := neverReceived[slug]; !never && !slices.Contains(mapped, slug) {
				t.Errorf("problem type %s of openapi.yaml is not mapped by the %s", slug, sc.name)
			}
		}
		for _, slug := range mapped {
			if !slices.Contains(s.problems, slug) {
				t.Errorf("the %s maps problem type %s, which openapi.yaml's Problem schema does not list", sc.name, slug)
			}
		}
	}
	for slug := range neverReceived {
		if !slices.Contains(s.problems, slug) {
			t.Errorf("neverReceived of parity_test.go names problem type %s, which openapi.yaml no longer has", slug)
		}
	}
}

// The table names each client's methods in the client's own style.
func TestParityTableNamesFollowEachClientsStyle(t *testing.T) {
	style := []struct {
		lang string
		re   *regexp.Regexp
	}{
		{"Go", regexp.MustCompile(`^[A-Z][A-Za-z]*$`)},
		{"Python", regexp.MustCompile(`^[a-z][a-z_]*$`)},
		{"TypeScript", regexp.MustCompile(`^[a-z][A-Za-z]*$`)},
	}
	for op, m := range clientMethods {
		for i, name := range []string{m.Go, m.Python, m.TS} {
			if !style[i].re.MatchString(name) {
				t.Errorf("clientMethods[%q]: %s method %q", op, style[i].lang, name)
			}
		}
	}
}
