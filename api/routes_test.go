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
