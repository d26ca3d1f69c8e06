package api

import (
	"slices"
	"strings"
	"testing"
)

// TestEveryRouteIsInTheSpecAndEveryOperationIsRouted compares the routing
// table with openapi.yaml's paths, both ways, so that neither can grow an
// operation the other lacks.
func TestEveryRouteIsInTheSpecAndEveryOperationIsRouted(t *testing.T) {
	doc, err := spec()
	if err != nil {
		t.Fatal(err)
	}
	var inSpec []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inSpec = append(inSpec, strings.ToUpper(method)+" "+path)
		}
	}
	var routed []string
	for _, rt := range (&api{}).routes() {
		routed = append(routed, rt.method+" "+rt.pattern)
	}
	slices.Sort(inSpec)
	slices.Sort(routed)
	for _, op := range routed {
		if !slices.Contains(inSpec, op) {
			t.Errorf("%s is routed but not in openapi.yaml", op)
		}
	}
	for _, op := range inSpec {
		if !slices.Contains(routed, op) {
			t.Errorf("%s is in openapi.yaml but not routed (api/router.go)", op)
		}
	}
	if len(routed) == 0 {
		t.Fatal("no routes")
	}
}

// TestPercentEncodedPathSegmentsAreDecoded: a client that escapes a path
// segment (encodeURIComponent escapes the ':' of "host:8080") reaches the
// same candidate and election as one that does not, token scopes are
// checked on the decoded election, and a segment that decodes to a '/' is
// a 400, not another route.
func TestPercentEncodedPathSegmentsAreDecoded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	tok := e.campaign("el", "host:8080", "30s")
	e.do("PUT", "/v1/elections/el/candidates/host%3A8080/heartbeat", nil, token(tok)).expect(t, 200)
	if got := e.do("GET", "/v1/elections/%65l/candidates/host%3A8080", nil).expect(t, 200).json(t)["id"]; got != "host:8080" {
		t.Errorf("id %v, want host:8080", got)
	}
	e.do("GET", "/v1/elections/e%2Fl/leader", nil).expect(t, 400)
	e.do("DELETE", "/v1/elections/el/candidates/host%3A8080", nil, token(tok)).expect(t, 204)

	a := newEnv(t, Config{Tokens: authTokens()})
	a.do("GET", "/v1/elections/%62illing-a/candidates", nil, bearerHeader(readBillingOnlyTok)).expect(t, 404)
	a.do("GET", "/v1/elections/%70ayroll/candidates", nil, bearerHeader(readBillingOnlyTok)).expect(t, 403)
}
